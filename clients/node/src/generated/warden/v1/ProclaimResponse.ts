// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface ProclaimResponse {
  'resource'?: (string);
  'leaseId'?: (number | string | Long);
}

export interface ProclaimResponse__Output {
  'resource': (string);
  'leaseId': (number);
}
