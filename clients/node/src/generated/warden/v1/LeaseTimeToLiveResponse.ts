// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface LeaseTimeToLiveResponse {
  'leaseId'?: (number | string | Long);
  'ttlMs'?: (number | string | Long);
  'ttlRemainingMs'?: (number | string | Long);
  'locks'?: (string)[];
  'waits'?: (string)[];
  'graced'?: (boolean);
  'readIndex'?: (number | string | Long);
}

export interface LeaseTimeToLiveResponse__Output {
  'leaseId': (number);
  'ttlMs': (number);
  'ttlRemainingMs': (number);
  'locks': (string)[];
  'waits': (string)[];
  'graced': (boolean);
  'readIndex': (number);
}
