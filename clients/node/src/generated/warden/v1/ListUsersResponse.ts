// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { UserInfo as _warden_v1_UserInfo, UserInfo__Output as _warden_v1_UserInfo__Output } from '../../warden/v1/UserInfo.js';
import type { Long } from '@grpc/proto-loader';

export interface ListUsersResponse {
  'users'?: (_warden_v1_UserInfo)[];
  'readIndex'?: (number | string | Long);
}

export interface ListUsersResponse__Output {
  'users': (_warden_v1_UserInfo__Output)[];
  'readIndex': (number);
}
