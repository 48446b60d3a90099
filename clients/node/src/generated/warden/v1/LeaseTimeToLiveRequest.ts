// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface LeaseTimeToLiveRequest {
  'leaseId'?: (number | string | Long);
}

export interface LeaseTimeToLiveRequest__Output {
  'leaseId': (number);
}
