// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { TokenState as _warden_v1_TokenState, TokenState__Output as _warden_v1_TokenState__Output } from '../../warden/v1/TokenState.js';
import type { Long } from '@grpc/proto-loader';

export interface ValidateResponse {
  'resource'?: (string);
  'fencingToken'?: (number | string | Long);
  'state'?: (_warden_v1_TokenState);
  'holderToken'?: (number | string | Long);
  'readIndex'?: (number | string | Long);
}

export interface ValidateResponse__Output {
  'resource': (string);
  'fencingToken': (number);
  'state': (_warden_v1_TokenState__Output);
  'holderToken': (number);
  'readIndex': (number);
}
