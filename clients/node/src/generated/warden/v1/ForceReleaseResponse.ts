// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface ForceReleaseResponse {
  'resource'?: (string);
  'leaseId'?: (number | string | Long);
  'fencingToken'?: (number | string | Long);
}

export interface ForceReleaseResponse__Output {
  'resource': (string);
  'leaseId': (number);
  'fencingToken': (number);
}
