// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { LockMode as _warden_v1_LockMode, LockMode__Output as _warden_v1_LockMode__Output } from '../../warden/v1/LockMode.js';
import type { Long } from '@grpc/proto-loader';

export interface ListHolder {
  'leaseId'?: (number | string | Long);
  'fencingToken'?: (number | string | Long);
  'ageMs'?: (number | string | Long);
  'ttlRemainingMs'?: (number | string | Long);
  'mode'?: (_warden_v1_LockMode);
  'slot'?: (number);
  '_slot'?: "slot";
}

export interface ListHolder__Output {
  'leaseId': (number);
  'fencingToken': (number);
  'ageMs': (number);
  'ttlRemainingMs': (number);
  'mode': (_warden_v1_LockMode__Output);
  'slot'?: (number);
  '_slot'?: "slot";
}
