// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface RequestHeader {
  'clientId'?: (number | string | Long);
  'requestId'?: (number | string | Long);
  'ackedRequestId'?: (number | string | Long);
}

export interface RequestHeader__Output {
  'clientId': (number);
  'requestId': (number);
  'ackedRequestId': (number);
}
