// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface Quota {
  'leases'?: (number | string | Long);
  'locks'?: (number | string | Long);
  'waiters'?: (number | string | Long);
  'clients'?: (number | string | Long);
  'values'?: (number | string | Long);
  'valueBytes'?: (number | string | Long);
  'waitsPerResource'?: (number | string | Long);
  'watches'?: (number | string | Long);
}

export interface Quota__Output {
  'leases': (number);
  'locks': (number);
  'waiters': (number);
  'clients': (number);
  'values': (number);
  'valueBytes': (number);
  'waitsPerResource': (number);
  'watches': (number);
}
