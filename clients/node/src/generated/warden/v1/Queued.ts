// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface Queued {
  'position'?: (number | string | Long);
  'leaseId'?: (number | string | Long);
  'behind'?: (string);
  'holderLeaseId'?: (number | string | Long);
  'lockDelayRemainingMs'?: (number | string | Long);
}

export interface Queued__Output {
  'position': (number);
  'leaseId': (number);
  'behind': (string);
  'holderLeaseId': (number);
  'lockDelayRemainingMs': (number);
}
