// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface ReplaceNodeRequest {
  'oldNodeId'?: (number | string | Long);
  'newNodeId'?: (number | string | Long);
  'addr'?: (string);
  'peerAddr'?: (string);
}

export interface ReplaceNodeRequest__Output {
  'oldNodeId': (number);
  'newNodeId': (number);
  'addr': (string);
  'peerAddr': (string);
}
