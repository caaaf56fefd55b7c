import type { VerifiedEvent, VerifiedState, WatchedJob } from '../../../src/core/subscriber/verified-message.ts';
import type { JobStatus, LifecycleEvent } from '../../../src/core/vocabulary.ts';
import type { WatchAction } from '../../../src/core/subscriber/watch-actions.ts';
import { WatchState, type WatchStateOptions } from '../../../src/core/subscriber/watch-state.ts';

export const JOB_A = 'aaaaaaaa';
export const JOB_B = 'bbbbbbbb';

/** A monotonic counter the test moves by hand. */
export class FakeClock {
  ms = 0;
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

export function watchedJob(jobId: string, limits: Partial<WatchedJob> = {}): WatchedJob {
  return { jobId, timeoutSec: 3600, idleTimeoutSec: 120, ackTimeoutSec: 180, ...limits };
}

export function event(jobId: string, seq: number, name: LifecycleEvent = 'progress'): VerifiedEvent {
  return { kind: 'event', jobId, seq, event: name, payload: { job_id: jobId, seq, event: name } };
}

export function state(jobId: string, seq: number, status: JobStatus, retained = false): VerifiedState {
  const payload = { job_id: jobId, seq, event: 'state', status };
  return { kind: 'state', jobId, seq, status, lastEvent: 'progress', payload, retained };
}

/** A watch over `jobs` whose broker connection is already up, on a fresh fake clock. */
export function connectedWatch(jobs: WatchedJob[] = [watchedJob(JOB_A)], extra: Partial<WatchStateOptions> = {}): { watch: WatchState; clock: FakeClock } {
  const clock = new FakeClock();
  const watch = new WatchState({ jobs, monitor: false, now: clock.now, ...extra });
  watch.onConnected();
  return { watch, clock };
}

export const ofType = <T extends WatchAction['type']>(actions: WatchAction[], type: T): Extract<WatchAction, { type: T }>[] =>
  actions.filter((a): a is Extract<WatchAction, { type: T }> => a.type === type);

export const exitOf = (actions: WatchAction[]) => ofType(actions, 'exit')[0];
