// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Member as _warden_v1_Member, Member__Output as _warden_v1_Member__Output } from '../../warden/v1/Member.js';
import type { Timing as _warden_v1_Timing, Timing__Output as _warden_v1_Timing__Output } from '../../warden/v1/Timing.js';
import type { Long } from '@grpc/proto-loader';

export interface ClusterStatusResponse {
  'clusterId'?: (string);
  'leaderId'?: (number | string | Long);
  'term'?: (number | string | Long);
  'commitIndex'?: (number | string | Long);
  'members'?: (_warden_v1_Member)[];
  'timing'?: (_warden_v1_Timing | null);
  'nodeId'?: (number | string | Long);
  'lastLogIndex'?: (number | string | Long);
  'insecure'?: (boolean);
  'electionPrefix'?: (string);
  'maxRequestsInFlight'?: (number | string | Long);
  'membersLogFormat'?: (number);
  'unconfirmedPeers'?: (number | string | Long)[];
}

export interface ClusterStatusResponse__Output {
  'clusterId': (string);
  'leaderId': (number);
  'term': (number);
  'commitIndex': (number);
  'members': (_warden_v1_Member__Output)[];
  'timing': (_warden_v1_Timing__Output | null);
  'nodeId': (number);
  'lastLogIndex': (number);
  'insecure': (boolean);
  'electionPrefix': (string);
  'maxRequestsInFlight': (number);
  'membersLogFormat': (number);
  'unconfirmedPeers': (number)[];
}
