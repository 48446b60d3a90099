// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface Member {
  'id'?: (number | string | Long);
  'addr'?: (string);
  'role'?: (string);
  'appliedIndex'?: (number | string | Long);
  'lastContactMs'?: (number | string | Long);
  'matchedIndex'?: (number | string | Long);
  'term'?: (number | string | Long);
  'lagEntries'?: (number | string | Long);
  'contacted'?: (boolean);
  'peerAddr'?: (string);
}

export interface Member__Output {
  'id': (number);
  'addr': (string);
  'role': (string);
  'appliedIndex': (number);
  'lastContactMs': (number);
  'matchedIndex': (number);
  'term': (number);
  'lagEntries': (number);
  'contacted': (boolean);
  'peerAddr': (string);
}
