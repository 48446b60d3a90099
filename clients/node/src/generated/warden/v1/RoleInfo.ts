// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RoleGrant as _warden_v1_RoleGrant, RoleGrant__Output as _warden_v1_RoleGrant__Output } from '../../warden/v1/RoleGrant.js';
import type { Quota as _warden_v1_Quota, Quota__Output as _warden_v1_Quota__Output } from '../../warden/v1/Quota.js';

export interface RoleInfo {
  'name'?: (string);
  'grants'?: (_warden_v1_RoleGrant)[];
  'quota'?: (_warden_v1_Quota | null);
}

export interface RoleInfo__Output {
  'name': (string);
  'grants': (_warden_v1_RoleGrant__Output)[];
  'quota': (_warden_v1_Quota__Output | null);
}
