// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RoleInfo as _warden_v1_RoleInfo, RoleInfo__Output as _warden_v1_RoleInfo__Output } from '../../warden/v1/RoleInfo.js';
import type { Long } from '@grpc/proto-loader';

export interface ListRolesResponse {
  'roles'?: (_warden_v1_RoleInfo)[];
  'readIndex'?: (number | string | Long);
}

export interface ListRolesResponse__Output {
  'roles': (_warden_v1_RoleInfo__Output)[];
  'readIndex': (number);
}
