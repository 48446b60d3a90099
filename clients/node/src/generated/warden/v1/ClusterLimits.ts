// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Quota as _warden_v1_Quota, Quota__Output as _warden_v1_Quota__Output } from '../../warden/v1/Quota.js';
import type { Long } from '@grpc/proto-loader';

export interface ClusterLimits {
  'maxLeases'?: (number | string | Long);
  'maxClients'?: (number | string | Long);
  'defaultQuota'?: (_warden_v1_Quota | null);
}

export interface ClusterLimits__Output {
  'maxLeases': (number);
  'maxClients': (number);
  'defaultQuota': (_warden_v1_Quota__Output | null);
}
