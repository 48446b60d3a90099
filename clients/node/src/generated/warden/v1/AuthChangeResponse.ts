// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface AuthChangeResponse {
}

export interface AuthChangeResponse__Output {
}
