// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface AuthAuditTrailRequest {
}

export interface AuthAuditTrailRequest__Output {
}
