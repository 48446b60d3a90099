// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { RequestHeader as _warden_v1_RequestHeader, RequestHeader__Output as _warden_v1_RequestHeader__Output } from '../../warden/v1/RequestHeader.js';
import type { Long } from '@grpc/proto-loader';

export interface ForceReleaseRequest {
  'header'?: (_warden_v1_RequestHeader | null);
  'resource'?: (string);
  'fencingToken'?: (number | string | Long);
  'requestedBy'?: (string);
}

export interface ForceReleaseRequest__Output {
  'header': (_warden_v1_RequestHeader__Output | null);
  'resource': (string);
  'fencingToken': (number);
  'requestedBy': (string);
}
