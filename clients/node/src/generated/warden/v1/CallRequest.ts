// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { AcquireRequest as _warden_v1_AcquireRequest, AcquireRequest__Output as _warden_v1_AcquireRequest__Output } from '../../warden/v1/AcquireRequest.js';
import type { ReleaseRequest as _warden_v1_ReleaseRequest, ReleaseRequest__Output as _warden_v1_ReleaseRequest__Output } from '../../warden/v1/ReleaseRequest.js';
import type { Long } from '@grpc/proto-loader';

export interface CallRequest {
  'callId'?: (number | string | Long);
  'acquire'?: (_warden_v1_AcquireRequest | null);
  'release'?: (_warden_v1_ReleaseRequest | null);
  'call'?: "acquire"|"release";
}

export interface CallRequest__Output {
  'callId': (number);
  'acquire'?: (_warden_v1_AcquireRequest__Output | null);
  'release'?: (_warden_v1_ReleaseRequest__Output | null);
  'call'?: "acquire"|"release";
}
