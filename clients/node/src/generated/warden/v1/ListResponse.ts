// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { ListedLock as _warden_v1_ListedLock, ListedLock__Output as _warden_v1_ListedLock__Output } from '../../warden/v1/ListedLock.js';
import type { Long } from '@grpc/proto-loader';

export interface ListResponse {
  'locks'?: (_warden_v1_ListedLock)[];
  'readIndex'?: (number | string | Long);
}

export interface ListResponse__Output {
  'locks': (_warden_v1_ListedLock__Output)[];
  'readIndex': (number);
}
