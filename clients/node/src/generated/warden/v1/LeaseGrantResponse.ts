// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface LeaseGrantResponse {
  'leaseId'?: (number | string | Long);
  'ttlMs'?: (number | string | Long);
}

export interface LeaseGrantResponse__Output {
  'leaseId': (number);
  'ttlMs': (number);
}
