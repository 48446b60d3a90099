// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface LeaseRevokeResponse {
  'leaseId'?: (number | string | Long);
  'revoked'?: (boolean);
}

export interface LeaseRevokeResponse__Output {
  'leaseId': (number);
  'revoked': (boolean);
}
