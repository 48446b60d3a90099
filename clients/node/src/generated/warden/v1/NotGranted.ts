// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface NotGranted {
  'resource'?: (string);
  'holderLeaseId'?: (number | string | Long);
  'reason'?: (string);
  'lockDelayRemainingMs'?: (number | string | Long);
}

export interface NotGranted__Output {
  'resource': (string);
  'holderLeaseId': (number);
  'reason': (string);
  'lockDelayRemainingMs': (number);
}
