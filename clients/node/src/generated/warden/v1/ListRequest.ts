// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface ListRequest {
  'prefix'?: (string);
}

export interface ListRequest__Output {
  'prefix': (string);
}
