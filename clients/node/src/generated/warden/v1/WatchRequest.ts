// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface WatchRequest {
  'resource'?: (string);
  'prefix'?: (string);
  'startIndex'?: (number | string | Long);
  'target'?: "resource"|"prefix";
}

export interface WatchRequest__Output {
  'resource'?: (string);
  'prefix'?: (string);
  'startIndex': (number);
  'target'?: "resource"|"prefix";
}
