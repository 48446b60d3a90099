// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface HotLock {
  'resource'?: (string);
  'queueLength'?: (number | string | Long);
  'oldestWaiterAgeMs'?: (number | string | Long);
  'grantsLastMinute'?: (number | string | Long);
  'expiriesLastMinute'?: (number | string | Long);
  'waitP99Ms'?: (number | string | Long);
  '_waitP99Ms'?: "waitP99Ms";
}

export interface HotLock__Output {
  'resource': (string);
  'queueLength': (number);
  'oldestWaiterAgeMs': (number);
  'grantsLastMinute': (number);
  'expiriesLastMinute': (number);
  'waitP99Ms'?: (number);
  '_waitP99Ms'?: "waitP99Ms";
}
