// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface MembershipResponse {
  'voters'?: (number | string | Long)[];
  'learners'?: (number | string | Long)[];
  'logIndex'?: (number | string | Long);
}

export interface MembershipResponse__Output {
  'voters': (number)[];
  'learners': (number)[];
  'logIndex': (number);
}
