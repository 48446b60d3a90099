// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

export const TokenState = {
  TOKEN_STATE_UNSPECIFIED: 'TOKEN_STATE_UNSPECIFIED',
  TOKEN_STATE_CURRENT: 'TOKEN_STATE_CURRENT',
  TOKEN_STATE_STALE: 'TOKEN_STATE_STALE',
  TOKEN_STATE_UNKNOWN: 'TOKEN_STATE_UNKNOWN',
} as const;

export type TokenState =
  | 'TOKEN_STATE_UNSPECIFIED'
  | 0
  | 'TOKEN_STATE_CURRENT'
  | 1
  | 'TOKEN_STATE_STALE'
  | 2
  | 'TOKEN_STATE_UNKNOWN'
  | 3

export type TokenState__Output = typeof TokenState[keyof typeof TokenState]
