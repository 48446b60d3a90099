// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface AuditRecord {
  'index'?: (number | string | Long);
  'resource'?: (string);
  'leaseId'?: (number | string | Long);
  'fencingToken'?: (number | string | Long);
  'requestedBy'?: (string);
  'atUnixMs'?: (number | string | Long);
}

export interface AuditRecord__Output {
  'index': (number);
  'resource': (string);
  'leaseId': (number);
  'fencingToken': (number);
  'requestedBy': (string);
  'atUnixMs': (number);
}
