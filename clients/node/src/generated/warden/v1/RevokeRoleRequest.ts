// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from '../../warden/v1/RequestHeader.js';

export interface RevokeRoleRequest {
  'header'?: (_warden_v1_RequestHeader | null);
  'user'?: (string);
  'role'?: (string);
}

export interface RevokeRoleRequest__Output {
  'header': (_warden_v1_RequestHeader__Output | null);
  'user': (string);
  'role': (string);
}
