// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface ReleaseResponse {
  'resource'?: (string);
  'leaseId'?: (number | string | Long);
  'released'?: (boolean);
}

export interface ReleaseResponse__Output {
  'resource': (string);
  'leaseId': (number);
  'released': (boolean);
}
