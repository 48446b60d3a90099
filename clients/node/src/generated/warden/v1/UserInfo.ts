// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Quota as _warden_v1_Quota, Quota__Output as _warden_v1_Quota__Output } from '../../warden/v1/Quota.js';
import type { QuotaUsage as _warden_v1_QuotaUsage, QuotaUsage__Output as _warden_v1_QuotaUsage__Output } from '../../warden/v1/QuotaUsage.js';

export interface UserInfo {
  'principal'?: (string);
  'roles'?: (string)[];
  'quota'?: (_warden_v1_Quota | null);
  'usage'?: (_warden_v1_QuotaUsage | null);
  'denied'?: (boolean);
}

export interface UserInfo__Output {
  'principal': (string);
  'roles': (string)[];
  'quota': (_warden_v1_Quota__Output | null);
  'usage': (_warden_v1_QuotaUsage__Output | null);
  'denied': (boolean);
}
