// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.

import type { Long } from '@grpc/proto-loader';

export interface Timing {
  'heartbeatMs'?: (number | string | Long);
  'electionTimeoutMinMs'?: (number | string | Long);
  'electionTimeoutMaxMs'?: (number | string | Long);
  'checkpointIntervalMs'?: (number | string | Long);
  'promotionGraceMs'?: (number | string | Long);
  'renewBatchWindowMs'?: (number | string | Long);
  'minTtlMs'?: (number | string | Long);
  'maxTtlMs'?: (number | string | Long);
  'maxWaitTimeoutMs'?: (number | string | Long);
  'maxLockDelayMs'?: (number | string | Long);
  'boundEMs'?: (number | string | Long);
  'boundGMs'?: (number | string | Long);
  'preset'?: (string);
  'callTimeoutFloorMs'?: (number | string | Long);
}

export interface Timing__Output {
  'heartbeatMs': (number);
  'electionTimeoutMinMs': (number);
  'electionTimeoutMaxMs': (number);
  'checkpointIntervalMs': (number);
  'promotionGraceMs': (number);
  'renewBatchWindowMs': (number);
  'minTtlMs': (number);
  'maxTtlMs': (number);
  'maxWaitTimeoutMs': (number);
  'maxLockDelayMs': (number);
  'boundEMs': (number);
  'boundGMs': (number);
  'preset': (string);
  'callTimeoutFloorMs': (number);
}
