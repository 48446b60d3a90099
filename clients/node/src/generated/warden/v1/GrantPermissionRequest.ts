// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from '../../warden/v1/RequestHeader.js';
import type { Permission as _warden_v1_Permission, Permission__Output as _warden_v1_Permission__Output } from '../../warden/v1/Permission.js';

export interface GrantPermissionRequest {
  'header'?: (_warden_v1_RequestHeader | null);
  'role'?: (string);
  'prefix'?: (string);
  'permission'?: (_warden_v1_Permission);
}

export interface GrantPermissionRequest__Output {
  'header': (_warden_v1_RequestHeader__Output | null);
  'role': (string);
  'prefix': (string);
  'permission': (_warden_v1_Permission__Output);
}
