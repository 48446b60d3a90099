// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from '../../warden/v1/RequestHeader.js';
import type { Long } from '@grpc/proto-loader';

export interface CancelWaitRequest {
  'header'?: (_warden_v1_RequestHeader | null);
  'acquireRequestId'?: (number | string | Long);
  'resource'?: (string);
}

export interface CancelWaitRequest__Output {
  'header': (_warden_v1_RequestHeader__Output | null);
  'acquireRequestId': (number);
  'resource': (string);
}
