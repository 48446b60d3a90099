// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface SaveSnapshotHead {
  'clusterId'?: (string);
  'appliedIndex'?: (number | string | Long);
  'term'?: (number | string | Long);
  'leaderNodeId'?: (number | string | Long);
  'nodeId'?: (number | string | Long);
  'dataBytes'?: (number | string | Long);
}

export interface SaveSnapshotHead__Output {
  'clusterId': (string);
  'appliedIndex': (number);
  'term': (number);
  'leaderNodeId': (number);
  'nodeId': (number);
  'dataBytes': (number);
}
