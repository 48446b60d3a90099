// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface RemoveNodeRequest {
  'nodeId'?: (number | string | Long);
}

export interface RemoveNodeRequest__Output {
  'nodeId': (number);
}
