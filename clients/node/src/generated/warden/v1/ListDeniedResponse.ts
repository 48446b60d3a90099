// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface ListDeniedResponse {
  'users'?: (string)[];
  'serials'?: (string)[];
  'fileUsers'?: (string)[];
  'fileSerials'?: (string)[];
  'readIndex'?: (number | string | Long);
}

export interface ListDeniedResponse__Output {
  'users': (string)[];
  'serials': (string)[];
  'fileUsers': (string)[];
  'fileSerials': (string)[];
  'readIndex': (number);
}
