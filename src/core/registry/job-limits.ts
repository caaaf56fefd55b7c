import type { MamConfig } from '../config/config.ts';

/** Contract §2: a job's wall budget when none is given. */
export const DEFAULT_TIMEOUT_SEC = 3600;

export interface JobLimits {
  heartbeatSec: number;
  heartbeatMisses: number;
  ackTimeoutSec: number;
  /** Unset: heartbeatMisses × heartbeatSec (contract §2), computed when the record is written. */
  idleTimeoutSec?: number | undefined;
  timeoutSec: number;
}

/** A job's timing as asked (`--heartbeat`, `--timeout`, …), the configuration filling what was not. */
export function resolveJobLimits(
  asked: Partial<Record<keyof JobLimits, number | undefined>>,
  config: Pick<MamConfig, 'heartbeatSec' | 'heartbeatMisses' | 'ackTimeoutSec'>,
): JobLimits {
  return {
    heartbeatSec: asked.heartbeatSec ?? config.heartbeatSec,
    heartbeatMisses: asked.heartbeatMisses ?? config.heartbeatMisses,
    ackTimeoutSec: asked.ackTimeoutSec ?? config.ackTimeoutSec,
    idleTimeoutSec: asked.idleTimeoutSec,
    timeoutSec: asked.timeoutSec ?? DEFAULT_TIMEOUT_SEC,
  };
}
