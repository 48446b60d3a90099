// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

export const LockMode = {
  LOCK_MODE_UNSPECIFIED: 'LOCK_MODE_UNSPECIFIED',
  LOCK_MODE_SHARED: 'LOCK_MODE_SHARED',
  LOCK_MODE_EXCLUSIVE: 'LOCK_MODE_EXCLUSIVE',
} as const;

export type LockMode =
  | 'LOCK_MODE_UNSPECIFIED'
  | 0
  | 'LOCK_MODE_SHARED'
  | 1
  | 'LOCK_MODE_EXCLUSIVE'
  | 2

export type LockMode__Output = typeof LockMode[keyof typeof LockMode]
