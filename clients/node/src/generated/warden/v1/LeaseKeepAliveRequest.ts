// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface LeaseKeepAliveRequest {
  'leaseId'?: (number | string | Long);
  'sequence'?: (number | string | Long);
}

export interface LeaseKeepAliveRequest__Output {
  'leaseId': (number);
  'sequence': (number);
}
