// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { ListHolder as _warden_v1_ListHolder, ListHolder__Output as _warden_v1_ListHolder__Output } from '../../warden/v1/ListHolder.js';
import type { ListWaiter as _warden_v1_ListWaiter, ListWaiter__Output as _warden_v1_ListWaiter__Output } from '../../warden/v1/ListWaiter.js';
import type { Long } from '@grpc/proto-loader';

export interface ListedLock {
  'resource'?: (string);
  'holder'?: (_warden_v1_ListHolder | null);
  'waiters'?: (_warden_v1_ListWaiter)[];
  'lockDelayRemainingMs'?: (number | string | Long);
  'kind'?: (string);
  'limit'?: (number);
  'holders'?: (_warden_v1_ListHolder)[];
}

export interface ListedLock__Output {
  'resource': (string);
  'holder': (_warden_v1_ListHolder__Output | null);
  'waiters': (_warden_v1_ListWaiter__Output)[];
  'lockDelayRemainingMs': (number);
  'kind': (string);
  'limit': (number);
  'holders': (_warden_v1_ListHolder__Output)[];
}
