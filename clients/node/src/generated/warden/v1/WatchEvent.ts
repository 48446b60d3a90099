// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface WatchEvent {
  'index'?: (number | string | Long);
  'resource'?: (string);
  'event'?: (string);
  'leaseId'?: (number | string | Long);
  'fencingToken'?: (number | string | Long);
}

export interface WatchEvent__Output {
  'index': (number);
  'resource': (string);
  'event': (string);
  'leaseId': (number);
  'fencingToken': (number);
}
