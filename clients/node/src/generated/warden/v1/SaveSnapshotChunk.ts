// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { SaveSnapshotHead as _warden_v1_SaveSnapshotHead, SaveSnapshotHead__Output as _warden_v1_SaveSnapshotHead__Output } from '../../warden/v1/SaveSnapshotHead.js';

export interface SaveSnapshotChunk {
  'head'?: (_warden_v1_SaveSnapshotHead | null);
  'data'?: (Buffer | Uint8Array | string);
  'done'?: (boolean);
}

export interface SaveSnapshotChunk__Output {
  'head': (_warden_v1_SaveSnapshotHead__Output | null);
  'data': (Buffer);
  'done': (boolean);
}
