// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface ListWaiter {
  'leaseId'?: (number | string | Long);
  'ageMs'?: (number | string | Long);
}

export interface ListWaiter__Output {
  'leaseId': (number);
  'ageMs': (number);
}
