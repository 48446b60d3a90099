// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from '../../warden/v1/RequestHeader.js';
import type { Long } from '@grpc/proto-loader';

export interface LeaseRevokeRequest {
  'header'?: (_warden_v1_RequestHeader | null);
  'leaseId'?: (number | string | Long);
}

export interface LeaseRevokeRequest__Output {
  'header': (_warden_v1_RequestHeader__Output | null);
  'leaseId': (number);
}
