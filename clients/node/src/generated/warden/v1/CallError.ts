// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.


export interface CallError {
  'code'?: (number);
  'message'?: (string);
  'leader'?: (string);
  'details'?: (Buffer | Uint8Array | string);
}

export interface CallError__Output {
  'code': (number);
  'message': (string);
  'leader': (string);
  'details': (Buffer);
}
