// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface ClusterStatusRequest {
}

export interface ClusterStatusRequest__Output {
}
