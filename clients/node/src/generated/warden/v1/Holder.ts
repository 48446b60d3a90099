// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { LockMode as _warden_v1_LockMode, LockMode__Output as _warden_v1_LockMode__Output } from '../../warden/v1/LockMode.js';
import type { Long } from '@grpc/proto-loader';

export interface Holder {
  'leaseId'?: (number | string | Long);
  'fencingToken'?: (number | string | Long);
  'ttlRemainingMs'?: (number | string | Long);
  'ttlMs'?: (number | string | Long);
  'value'?: (string);
  'mode'?: (_warden_v1_LockMode);
  'slot'?: (number);
  '_slot'?: "slot";
}

export interface Holder__Output {
  'leaseId': (number);
  'fencingToken': (number);
  'ttlRemainingMs': (number);
  'ttlMs': (number);
  'value': (string);
  'mode': (_warden_v1_LockMode__Output);
  'slot'?: (number);
  '_slot'?: "slot";
}
