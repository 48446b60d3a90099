// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { AcquireResponse as _warden_v1_AcquireResponse, AcquireResponse__Output as _warden_v1_AcquireResponse__Output } from '../../warden/v1/AcquireResponse.js';
import type { ReleaseResponse as _warden_v1_ReleaseResponse, ReleaseResponse__Output as _warden_v1_ReleaseResponse__Output } from '../../warden/v1/ReleaseResponse.js';
import type { CallError as _warden_v1_CallError, CallError__Output as _warden_v1_CallError__Output } from '../../warden/v1/CallError.js';
import type { Long } from '@grpc/proto-loader';

export interface CallResponse {
  'callId'?: (number | string | Long);
  'acquire'?: (_warden_v1_AcquireResponse | null);
  'release'?: (_warden_v1_ReleaseResponse | null);
  'error'?: (_warden_v1_CallError | null);
  'answer'?: "acquire"|"release"|"error";
}

export interface CallResponse__Output {
  'callId': (number);
  'acquire'?: (_warden_v1_AcquireResponse__Output | null);
  'release'?: (_warden_v1_ReleaseResponse__Output | null);
  'error'?: (_warden_v1_CallError__Output | null);
  'answer'?: "acquire"|"release"|"error";
}
