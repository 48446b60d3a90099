// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Queued as _warden_v1_Queued, Queued__Output as _warden_v1_Queued__Output } from '../../warden/v1/Queued.js';
import type { Granted as _warden_v1_Granted, Granted__Output as _warden_v1_Granted__Output } from '../../warden/v1/Granted.js';
import type { NotGranted as _warden_v1_NotGranted, NotGranted__Output as _warden_v1_NotGranted__Output } from '../../warden/v1/NotGranted.js';

export interface AcquireResponse {
  'queued'?: (_warden_v1_Queued | null);
  'granted'?: (_warden_v1_Granted | null);
  'notGranted'?: (_warden_v1_NotGranted | null);
  'event'?: "queued"|"granted"|"notGranted";
}

export interface AcquireResponse__Output {
  'queued'?: (_warden_v1_Queued__Output | null);
  'granted'?: (_warden_v1_Granted__Output | null);
  'notGranted'?: (_warden_v1_NotGranted__Output | null);
  'event'?: "queued"|"granted"|"notGranted";
}
