// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from '../../warden/v1/RequestHeader.js';
import type { LockMode as _warden_v1_LockMode, LockMode__Output as _warden_v1_LockMode__Output } from '../../warden/v1/LockMode.js';
import type { Long } from '@grpc/proto-loader';

export interface AcquireRequest {
  'header'?: (_warden_v1_RequestHeader | null);
  'resource'?: (string);
  'ttlMs'?: (number | string | Long);
  'leaseId'?: (number | string | Long);
  'waitTimeoutMs'?: (number | string | Long);
  'lockDelayMs'?: (number | string | Long);
  'mode'?: (_warden_v1_LockMode);
  'limit'?: (number);
  'resources'?: (string)[];
  'maxHoldMs'?: (number | string | Long);
}

export interface AcquireRequest__Output {
  'header': (_warden_v1_RequestHeader__Output | null);
  'resource': (string);
  'ttlMs': (number);
  'leaseId': (number);
  'waitTimeoutMs': (number);
  'lockDelayMs': (number);
  'mode': (_warden_v1_LockMode__Output);
  'limit': (number);
  'resources': (string)[];
  'maxHoldMs': (number);
}
