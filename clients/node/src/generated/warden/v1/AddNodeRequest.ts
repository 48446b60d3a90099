// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface AddNodeRequest {
  'nodeId'?: (number | string | Long);
  'addr'?: (string);
  'peerAddr'?: (string);
}

export interface AddNodeRequest__Output {
  'nodeId': (number);
  'addr': (string);
  'peerAddr': (string);
}
