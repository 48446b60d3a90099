// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { AuthAuditRecord as _warden_v1_AuthAuditRecord, AuthAuditRecord__Output as _warden_v1_AuthAuditRecord__Output } from '../../warden/v1/AuthAuditRecord.js';
import type { Long } from '@grpc/proto-loader';

export interface AuthAuditTrailResponse {
  'records'?: (_warden_v1_AuthAuditRecord)[];
  'readIndex'?: (number | string | Long);
}

export interface AuthAuditTrailResponse__Output {
  'records': (_warden_v1_AuthAuditRecord__Output)[];
  'readIndex': (number);
}
