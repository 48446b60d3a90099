// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface AuditTrailRequest {
}

export interface AuditTrailRequest__Output {
}
