// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface ProclaimRequest {
  'resource'?: (string);
  'leaseId'?: (number | string | Long);
  'fencingToken'?: (number | string | Long);
  'value'?: (string);
}

export interface ProclaimRequest__Output {
  'resource': (string);
  'leaseId': (number);
  'fencingToken': (number);
  'value': (string);
}
