// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from '../../warden/v1/RequestHeader.js';
import type { ClusterLimits as _warden_v1_ClusterLimits, ClusterLimits__Output as _warden_v1_ClusterLimits__Output } from '../../warden/v1/ClusterLimits.js';

export interface SetLimitsRequest {
  'header'?: (_warden_v1_RequestHeader | null);
  'limits'?: (_warden_v1_ClusterLimits | null);
}

export interface SetLimitsRequest__Output {
  'header': (_warden_v1_RequestHeader__Output | null);
  'limits': (_warden_v1_ClusterLimits__Output | null);
}
