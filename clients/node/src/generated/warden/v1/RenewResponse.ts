// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface RenewResponse {
  'leaseId'?: (number | string | Long);
  'ttlMs'?: (number | string | Long);
  'sequence'?: (number | string | Long);
}

export interface RenewResponse__Output {
  'leaseId': (number);
  'ttlMs': (number);
  'sequence': (number);
}
