// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Permission as _warden_v1_Permission, Permission__Output as _warden_v1_Permission__Output } from '../../warden/v1/Permission.js';

export interface RoleGrant {
  'prefix'?: (string);
  'permission'?: (_warden_v1_Permission);
}

export interface RoleGrant__Output {
  'prefix': (string);
  'permission': (_warden_v1_Permission__Output);
}
