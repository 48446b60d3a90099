// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface TopLocksRequest {
  'prefix'?: (string);
  'limit'?: (number);
}

export interface TopLocksRequest__Output {
  'prefix': (string);
  'limit': (number);
}
