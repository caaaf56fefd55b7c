import type { MamConfig } from '../config/config.ts';
import { UsageError } from '../errors.ts';
import type { StartOutcome } from '../heartbeat/timer-control.ts';
import type { Registry } from '../registry/registry.ts';
import { NotDelivered } from './not-delivered.ts';
import { type PublishRequest, type PublishResult, publishEvent } from './publisher.ts';

export interface HeartbeatRequest {
  periodSec: number;
  /** The process whose end stops the beats; default: the nearest agent-CLI ancestor, else the parent (contract §5). */
  watchPid?: number | undefined;
}

export interface AgentPublishOutcome {
  result: PublishResult;
  /** The event is on disk but the broker did not acknowledge it (the command still exits 2). */
  notDelivered?: NotDelivered | undefined;
  /** What became of `heartbeat`, when one was asked for. */
  heartbeat?: StartOutcome | undefined;
}

/**
 * `mam-publish` (contract §3, §5): publish one event and, for `started` with a heartbeat, arm the
 * timer. The timer is armed once `started` is recorded, delivered or not: the beats prove the agent
 * alive as soon as the broker is back.
 */
export async function publishAgentEvent(
  config: MamConfig,
  registry: Registry,
  req: PublishRequest,
  heartbeat?: HeartbeatRequest,
): Promise<AgentPublishOutcome> {
  if (heartbeat !== undefined && req.event !== 'started') throw new UsageError('a heartbeat is armed only with the started event');
  let watchPid: number | undefined;
  if (heartbeat !== undefined) {
    const [{ defaultWatchPid }, { isAlive }] = await Promise.all([import('../heartbeat/agent-ancestor.ts'), import('../heartbeat/proc.ts')]);
    if (heartbeat.watchPid !== undefined && !isAlive(heartbeat.watchPid)) throw new UsageError(`--watch-pid: no such process ${heartbeat.watchPid}`);
    watchPid = heartbeat.watchPid ?? defaultWatchPid();
  }
  let result: PublishResult;
  let notDelivered: NotDelivered | undefined;
  try {
    result = await publishEvent(config, registry, req);
  } catch (err) {
    if (!(err instanceof NotDelivered) || heartbeat === undefined) throw err;
    notDelivered = err;
    result = err.result;
  }
  if (heartbeat === undefined || watchPid === undefined) return { result, notDelivered };
  const { startHeartbeat } = await import('../heartbeat/timer-control.ts');
  const { record } = result;
  const outcome = await startHeartbeat(
    registry,
    { jobId: record.job_id, attemptId: record.attempt_id, dispatchToken: record.dispatch_token, periodSec: heartbeat.periodSec, watchPid },
    config.heartbeatDrainSec * 1000,
    config.env,
  );
  return { result, notDelivered, heartbeat: outcome };
}
