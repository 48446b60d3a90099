// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface CancelWaitResponse {
  'resource'?: (string);
  'leaseId'?: (number | string | Long);
  'outcome'?: (string);
  'fencingToken'?: (number | string | Long);
}

export interface CancelWaitResponse__Output {
  'resource': (string);
  'leaseId': (number);
  'outcome': (string);
  'fencingToken': (number);
}
