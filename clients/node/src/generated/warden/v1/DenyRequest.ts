// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from '../../warden/v1/RequestHeader.js';

export interface DenyRequest {
  'header'?: (_warden_v1_RequestHeader | null);
  'user'?: (string);
  'serial'?: (string);
  'target'?: "user"|"serial";
}

export interface DenyRequest__Output {
  'header': (_warden_v1_RequestHeader__Output | null);
  'user'?: (string);
  'serial'?: (string);
  'target'?: "user"|"serial";
}
