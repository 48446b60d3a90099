// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface ListRolesRequest {
}

export interface ListRolesRequest__Output {
}
