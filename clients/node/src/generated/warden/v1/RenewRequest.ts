// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface RenewRequest {
  'leaseId'?: (number | string | Long);
  'clientId'?: (number | string | Long);
  'sequence'?: (number | string | Long);
}

export interface RenewRequest__Output {
  'leaseId': (number);
  'clientId': (number);
  'sequence': (number);
}
