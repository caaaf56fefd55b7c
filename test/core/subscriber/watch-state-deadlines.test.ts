import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WatchState } from '../../../src/core/subscriber/watch-state.ts';
import { event, FakeClock, state, watchedJob } from './watch-fixtures.ts';

// WatchState keeps the earliest deadline of its jobs as they move instead of walking every job
// twice per message (issue 17). Checked here against the contract's clocks computed from scratch.

const JOBS = ['aaaaaaa0', 'aaaaaaa1', 'aaaaaaa2', 'aaaaaaa3'];
const S = 1000;

interface ModelJob {
  wall: number | null;
  idle: number | null;
  idleMs: number | null;
  newest: number;
  seqs: Set<number>;
  resolved: boolean;
}

type Op =
  | { type: 'advance'; ms: number }
  | { type: 'event'; job: number; seq: number; terminal: boolean }
  | { type: 'state'; job: number; seq: number; terminal: boolean }
  | { type: 'tick' };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ type: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 * S }) }),
  fc.record({ type: fc.constant('event' as const), job: fc.nat(JOBS.length - 1), seq: fc.integer({ min: 1, max: 12 }), terminal: fc.boolean() }),
  fc.record({ type: fc.constant('state' as const), job: fc.nat(JOBS.length - 1), seq: fc.integer({ min: 1, max: 12 }), terminal: fc.boolean() }),
  fc.record({ type: fc.constant('tick' as const) }),
);
const limits = fc.record({
  timeoutSec: fc.integer({ min: 0, max: 300 }),
  idleTimeoutSec: fc.integer({ min: 0, max: 120 }),
  ackTimeoutSec: fc.integer({ min: 0, max: 60 }),
});

const min = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));

describe('WatchState deadlines (the earliest kept as jobs move)', () => {
  it('nextDeadline and timeouts are those of the clocks computed from scratch, whatever the order of inputs', () => {
    fc.assert(
      fc.property(fc.array(limits, { minLength: JOBS.length, maxLength: JOBS.length }), fc.array(op, { maxLength: 60 }), (jobLimits, ops) => {
        const clock = new FakeClock();
        const watch = new WatchState({ jobs: JOBS.map((id, i) => watchedJob(id, jobLimits[i])), monitor: false, now: clock.now });
        watch.onConnected();
        const model: ModelJob[] = jobLimits.map((l) => ({
          wall: l.timeoutSec === 0 ? null : l.timeoutSec * S,
          idle: l.idleTimeoutSec === 0 ? null : (l.ackTimeoutSec + l.idleTimeoutSec) * S,
          idleMs: l.idleTimeoutSec === 0 ? null : l.idleTimeoutSec * S,
          newest: 0,
          seqs: new Set(),
          resolved: false,
        }));
        const expected = () => {
          let next: number | null = null;
          for (const j of model) if (!j.resolved) next = min(next, min(j.wall, j.idle));
          return next;
        };
        for (const o of ops) {
          if (watch.closed) break;
          const due = expected();
          if (o.type === 'advance') {
            clock.advance(o.ms);
            continue;
          }
          const expires = due !== null && clock.ms >= due;
          if (o.type === 'tick') {
            const actions = watch.onTick();
            expect(actions.some((a) => a.type === 'exit')).toBe(expires);
            continue;
          }
          const job = model[o.job]!;
          const id = JOBS[o.job]!;
          if (o.type === 'event') {
            const actions = watch.onEvent(event(id, o.seq, o.terminal ? 'completed' : 'progress'));
            expect(actions.some((a) => a.type === 'exit' && (a.reason === 'idle_timeout' || a.reason === 'wall_timeout'))).toBe(expires);
            if (expires || job.resolved || job.seqs.has(o.seq)) continue;
            job.seqs.add(o.seq);
            job.newest = Math.max(job.newest, o.seq);
            if (job.idleMs !== null) job.idle = clock.ms + job.idleMs;
            if (o.terminal) job.resolved = true;
          } else {
            const actions = watch.onState(state(id, o.seq, o.terminal ? 'completed' : 'running'));
            expect(actions.some((a) => a.type === 'exit' && (a.reason === 'idle_timeout' || a.reason === 'wall_timeout'))).toBe(expires);
            if (expires || job.resolved) continue;
            if (o.terminal) job.resolved = true;
            else if (o.seq > job.newest) {
              job.newest = o.seq;
              if (job.idleMs !== null && job.idle !== null) job.idle = Math.max(job.idle, clock.ms + job.idleMs);
            }
          }
          if (!watch.closed) expect(watch.nextDeadline).toBe(expected());
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('a monitor adds jobs on first sight; their flags set the clocks', () => {
    const clock = new FakeClock();
    const watch = new WatchState({ jobs: [], monitor: true, now: clock.now, flags: { idleTimeoutSec: 10 } });
    watch.onConnected();
    expect(watch.nextDeadline).toBeNull();
    clock.ms = 5 * S;
    watch.onEvent(event(JOBS[0]!, 1));
    expect(watch.nextDeadline).toBe(15 * S);
    clock.ms = 7 * S;
    watch.onEvent(event(JOBS[1]!, 1));
    expect(watch.nextDeadline).toBe(15 * S);
    clock.ms = 9 * S;
    watch.onEvent(event(JOBS[0]!, 2));
    expect(watch.nextDeadline).toBe(17 * S);
    watch.onEvent(event(JOBS[1]!, 2, 'completed'));
    expect(watch.nextDeadline).toBe(19 * S);
    watch.onEvent(event(JOBS[0]!, 3, 'error'));
    expect(watch.nextDeadline).toBeNull();
  });
});
