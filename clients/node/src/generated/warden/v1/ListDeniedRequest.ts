// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface ListDeniedRequest {
}

export interface ListDeniedRequest__Output {
}
