// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { ClusterLimits as _warden_v1_ClusterLimits, ClusterLimits__Output as _warden_v1_ClusterLimits__Output } from '../../warden/v1/ClusterLimits.js';
import type { Long } from '@grpc/proto-loader';

export interface GetLimitsResponse {
  'limits'?: (_warden_v1_ClusterLimits | null);
  'readIndex'?: (number | string | Long);
}

export interface GetLimitsResponse__Output {
  'limits': (_warden_v1_ClusterLimits__Output | null);
  'readIndex': (number);
}
