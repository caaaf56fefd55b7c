import type { Registry } from '../registry/registry.ts';
import { planTransition } from '../registry/transitions.ts';
import type { LifecycleEvent } from '../vocabulary.ts';
import { HeartbeatFiles } from './heartbeat-files.ts';
import { stopTimerLocked } from './timer-control.ts';

export interface TerminalRequest {
  jobId: string;
  event: LifecycleEvent;
  expectDispatchToken?: string | undefined;
  expectAttemptId?: number | undefined;
}

/**
 * Contract §5, before a terminal event takes its seq. First, under the registry lock, the attempt's
 * barrier: from then on every beat's commit is refused, so a beat has either taken its seq already
 * or never will. Then, under the heartbeat lock, the timer is stopped, given `drainMs` to finish
 * the beat it may have in flight, and killed. Only after that does the terminal take its seq and go
 * on the wire — so nothing of the attempt can follow it there.
 *
 * A request that the transition table would refuse (terminal job, stale token or attempt) fences
 * nothing: it must not silence the beats of an attempt it does not belong to. Its own commit then
 * refuses and audits it as usual.
 */
export async function fenceHeartbeat(registry: Registry, req: TerminalRequest, drainMs: number): Promise<void> {
  const files = new HeartbeatFiles(registry.paths, req.jobId);
  const fenced = await registry.withLock(async () => {
    const record = registry.read(req.jobId);
    const request = { kind: 'event', event: req.event, dispatchToken: req.expectDispatchToken, attemptId: req.expectAttemptId } as const;
    if (planTransition(record, request, record.updated_at).outcome === 'refused') return false;
    await files.writeBarrier(record);
    return true;
  });
  if (fenced) await files.withLock(() => stopTimerLocked(files, drainMs));
}
