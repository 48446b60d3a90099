// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from '../../warden/v1/RequestHeader.js';
import type { Quota as _warden_v1_Quota, Quota__Output as _warden_v1_Quota__Output } from '../../warden/v1/Quota.js';

export interface SetRoleQuotaRequest {
  'header'?: (_warden_v1_RequestHeader | null);
  'role'?: (string);
  'quota'?: (_warden_v1_Quota | null);
}

export interface SetRoleQuotaRequest__Output {
  'header': (_warden_v1_RequestHeader__Output | null);
  'role': (string);
  'quota': (_warden_v1_Quota__Output | null);
}
