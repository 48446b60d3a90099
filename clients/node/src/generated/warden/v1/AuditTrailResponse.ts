// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { AuditRecord as _warden_v1_AuditRecord, AuditRecord__Output as _warden_v1_AuditRecord__Output } from '../../warden/v1/AuditRecord.js';
import type { Long } from '@grpc/proto-loader';

export interface AuditTrailResponse {
  'records'?: (_warden_v1_AuditRecord)[];
  'readIndex'?: (number | string | Long);
}

export interface AuditTrailResponse__Output {
  'records': (_warden_v1_AuditRecord__Output)[];
  'readIndex': (number);
}
