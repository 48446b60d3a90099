// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { HotLock as _warden_v1_HotLock, HotLock__Output as _warden_v1_HotLock__Output } from '../../warden/v1/HotLock.js';
import type { Long } from '@grpc/proto-loader';

export interface TopLocksResponse {
  'locks'?: (_warden_v1_HotLock)[];
  'readIndex'?: (number | string | Long);
}

export interface TopLocksResponse__Output {
  'locks': (_warden_v1_HotLock__Output)[];
  'readIndex': (number);
}
