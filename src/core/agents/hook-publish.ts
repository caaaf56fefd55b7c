import type { MamConfig } from '../config/config.ts';
import { TransitionRefused } from '../errors.ts';
import { publishAgentEvent } from '../publisher/agent-publish.ts';
import { NotDelivered } from '../publisher/not-delivered.ts';
import type { Registry } from '../registry/registry.ts';
import { isTerminalStatus } from '../vocabulary.ts';
import type { HookAction } from './hook-events.ts';

export interface HookFence {
  attemptId?: number | undefined;
  dispatchToken?: string | undefined;
}

export type HookOutcome =
  | { published: string; seq: number; notDelivered?: NotDelivered | undefined }
  /** Nothing to publish: the event is not one MAM reports, or the agent already said it. */
  | { skipped: string };

/**
 * Publishes what a hook reported, unless the agent already did: hooks are a safety net under the
 * agent's own `mam-publish` calls, so a `started` after `started`, or anything after the job's
 * outcome, is skipped rather than refused. The fence still refuses a replaced attempt's hooks
 * (TransitionRefused, exit 5).
 */
export async function publishHookAction(config: MamConfig, registry: Registry, jobId: string, fence: HookFence, action: HookAction): Promise<HookOutcome> {
  if ('skip' in action) return { skipped: action.skip };
  const record = registry.read(jobId);
  const fenced =
    (fence.attemptId !== undefined && fence.attemptId !== record.attempt_id) ||
    (fence.dispatchToken !== undefined && fence.dispatchToken !== record.dispatch_token);
  if (!fenced) {
    if (isTerminalStatus(record.status)) return { skipped: `job already ${record.status}` };
    if (action.publish === 'started' && record.status === 'running') return { skipped: 'job already started' };
  }
  const heartbeat = action.publish === 'started' ? { periodSec: record.heartbeat_sec } : undefined;
  try {
    const outcome = await publishAgentEvent(
      config,
      registry,
      { jobId, event: action.publish, detail: action.detail, attempts: 3, expectAttemptId: fence.attemptId, expectDispatchToken: fence.dispatchToken },
      heartbeat,
    );
    return { published: action.publish, seq: outcome.result.seq, notDelivered: outcome.notDelivered };
  } catch (err) {
    // Lost a race with the agent's own publish (it said the same first): the same skip as above.
    if (err instanceof TransitionRefused && !fenced && isTerminalStatus(registry.read(jobId).status))
      return { skipped: `job already ${registry.read(jobId).status}` };
    if (err instanceof NotDelivered) return { published: action.publish, seq: err.result.seq, notDelivered: err };
    throw err;
  }
}
