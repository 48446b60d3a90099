// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface ListUsersRequest {
}

export interface ListUsersRequest__Output {
}
