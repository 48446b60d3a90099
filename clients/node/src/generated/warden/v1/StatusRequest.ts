// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface StatusRequest {
  'resource'?: (string);
}

export interface StatusRequest__Output {
  'resource': (string);
}
