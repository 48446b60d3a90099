// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface LeaseKeepAliveResponse {
  'leaseId'?: (number | string | Long);
  'ttlMs'?: (number | string | Long);
  'sequence'?: (number | string | Long);
  'live'?: (boolean);
}

export interface LeaseKeepAliveResponse__Output {
  'leaseId': (number);
  'ttlMs': (number);
  'sequence': (number);
  'live': (boolean);
}
