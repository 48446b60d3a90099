// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Holder as _warden_v1_Holder, Holder__Output as _warden_v1_Holder__Output } from '../../warden/v1/Holder.js';
import type { Long } from '@grpc/proto-loader';

export interface StatusResponse {
  'resource'?: (string);
  'holder'?: (_warden_v1_Holder | null);
  'waiters'?: (number | string | Long);
  'readIndex'?: (number | string | Long);
  'lockDelayRemainingMs'?: (number | string | Long);
  'kind'?: (string);
  'limit'?: (number);
  'holders'?: (_warden_v1_Holder)[];
}

export interface StatusResponse__Output {
  'resource': (string);
  'holder': (_warden_v1_Holder__Output | null);
  'waiters': (number);
  'readIndex': (number);
  'lockDelayRemainingMs': (number);
  'kind': (string);
  'limit': (number);
  'holders': (_warden_v1_Holder__Output)[];
}
