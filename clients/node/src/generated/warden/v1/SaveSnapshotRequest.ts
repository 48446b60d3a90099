// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface SaveSnapshotRequest {
}

export interface SaveSnapshotRequest__Output {
}
