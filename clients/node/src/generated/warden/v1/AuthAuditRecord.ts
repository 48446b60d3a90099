// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Permission as _warden_v1_Permission, Permission__Output as _warden_v1_Permission__Output } from '../../warden/v1/Permission.js';
import type { Quota as _warden_v1_Quota, Quota__Output as _warden_v1_Quota__Output } from '../../warden/v1/Quota.js';
import type { ClusterLimits as _warden_v1_ClusterLimits, ClusterLimits__Output as _warden_v1_ClusterLimits__Output } from '../../warden/v1/ClusterLimits.js';
import type { Long } from '@grpc/proto-loader';

export interface AuthAuditRecord {
  'index'?: (number | string | Long);
  'principal'?: (string);
  'op'?: (string);
  'role'?: (string);
  'prefix'?: (string);
  'permission'?: (_warden_v1_Permission);
  'user'?: (string);
  'quota'?: (_warden_v1_Quota | null);
  'limits'?: (_warden_v1_ClusterLimits | null);
  'atUnixMs'?: (number | string | Long);
  'serial'?: (string);
}

export interface AuthAuditRecord__Output {
  'index': (number);
  'principal': (string);
  'op': (string);
  'role': (string);
  'prefix': (string);
  'permission': (_warden_v1_Permission__Output);
  'user': (string);
  'quota': (_warden_v1_Quota__Output | null);
  'limits': (_warden_v1_ClusterLimits__Output | null);
  'atUnixMs': (number);
  'serial': (string);
}
