// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface SaveSnapshotResponse {
  'clusterId'?: (string);
  'appliedIndex'?: (number | string | Long);
  'term'?: (number | string | Long);
  'leaderNodeId'?: (number | string | Long);
  'data'?: (Buffer | Uint8Array | string);
  'nodeId'?: (number | string | Long);
}

export interface SaveSnapshotResponse__Output {
  'clusterId': (string);
  'appliedIndex': (number);
  'term': (number);
  'leaderNodeId': (number);
  'data': (Buffer);
  'nodeId': (number);
}
