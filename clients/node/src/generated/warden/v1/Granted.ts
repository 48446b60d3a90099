// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { LockMode as _warden_v1_LockMode, LockMode__Output as _warden_v1_LockMode__Output } from '../../warden/v1/LockMode.js';
import type { ResourceToken as _warden_v1_ResourceToken, ResourceToken__Output as _warden_v1_ResourceToken__Output } from '../../warden/v1/ResourceToken.js';
import type { Long } from '@grpc/proto-loader';

export interface Granted {
  'resource'?: (string);
  'leaseId'?: (number | string | Long);
  'fencingToken'?: (number | string | Long);
  'ttlMs'?: (number | string | Long);
  'logIndex'?: (number | string | Long);
  'slot'?: (number);
  'mode'?: (_warden_v1_LockMode);
  'grants'?: (_warden_v1_ResourceToken)[];
  'maxHoldMs'?: (number | string | Long);
  '_slot'?: "slot";
}

export interface Granted__Output {
  'resource': (string);
  'leaseId': (number);
  'fencingToken': (number);
  'ttlMs': (number);
  'logIndex': (number);
  'slot'?: (number);
  'mode': (_warden_v1_LockMode__Output);
  'grants': (_warden_v1_ResourceToken__Output)[];
  'maxHoldMs': (number);
  '_slot'?: "slot";
}
