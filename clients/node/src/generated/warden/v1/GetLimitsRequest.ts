// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface GetLimitsRequest {
}

export interface GetLimitsRequest__Output {
}
