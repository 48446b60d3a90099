// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

export const Permission = {
  PERMISSION_UNSPECIFIED: 'PERMISSION_UNSPECIFIED',
  PERMISSION_READ: 'PERMISSION_READ',
  PERMISSION_LOCK: 'PERMISSION_LOCK',
  PERMISSION_ADMIN: 'PERMISSION_ADMIN',
} as const;

export type Permission =
  | 'PERMISSION_UNSPECIFIED'
  | 0
  | 'PERMISSION_READ'
  | 1
  | 'PERMISSION_LOCK'
  | 2
  | 'PERMISSION_ADMIN'
  | 3

export type Permission__Output = typeof Permission[keyof typeof Permission]
