// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface ValidateRequest {
  'resource'?: (string);
  'fencingToken'?: (number | string | Long);
}

export interface ValidateRequest__Output {
  'resource': (string);
  'fencingToken': (number);
}
