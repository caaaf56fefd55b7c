import { describe, expect, it } from 'vitest';
import { WatchState } from '../../../src/core/subscriber/watch-state.ts';
import { connectedWatch, event, exitOf, FakeClock, JOB_A, JOB_B, ofType, state, watchedJob } from './watch-fixtures.ts';

describe('WatchState outcome (contract §4, exit codes §1)', () => {
  it('a completed event prints, resolves and exits 0', () => {
    const { watch } = connectedWatch();
    expect(watch.onEvent(event(JOB_A, 1, 'started'))).toEqual([
      { type: 'print', jobId: JOB_A, payload: event(JOB_A, 1, 'started').payload, via: 'event', seq: 1, event: 'started' },
    ]);
    const actions = watch.onEvent(event(JOB_A, 2, 'completed'));
    expect(actions.map((a) => a.type)).toEqual(['print', 'resolved', 'exit']);
    expect(ofType(actions, 'resolved')[0]).toMatchObject({ status: 'completed', via: 'event' });
    expect(exitOf(actions)).toEqual({ type: 'exit', reason: 'all_completed' });
    expect(watch.closed).toBe(true);
  });

  it('an error event exits 1', () => {
    const { watch } = connectedWatch();
    expect(exitOf(watch.onEvent(event(JOB_A, 1, 'error')))).toEqual({ type: 'exit', reason: 'job_failed' });
  });

  it('a cancelled state prints its payload once and exits 1', () => {
    const { watch } = connectedWatch();
    const msg = state(JOB_A, 3, 'cancelled');
    const actions = watch.onState(msg);
    expect(ofType(actions, 'print')).toEqual([{ type: 'print', jobId: JOB_A, payload: msg.payload, via: 'state', seq: 3, event: null }]);
    expect(exitOf(actions)).toMatchObject({ reason: 'job_failed' });
  });

  it('with two jobs, one error gives 1 only once both are resolved', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A), watchedJob(JOB_B)]);
    const first = watch.onEvent(event(JOB_A, 1, 'error'));
    expect(first.map((a) => a.type)).toEqual(['print', 'resolved']);
    expect(watch.unresolvedJobIds).toEqual([JOB_B]);
    expect(exitOf(watch.onEvent(event(JOB_B, 1, 'completed')))).toMatchObject({ reason: 'job_failed' });
  });

  it('two completed jobs give 0', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A), watchedJob(JOB_B)]);
    watch.onEvent(event(JOB_B, 1, 'completed'));
    expect(exitOf(watch.onEvent(event(JOB_A, 1, 'completed')))).toMatchObject({ reason: 'all_completed' });
  });

  it('a retained terminal state delivered twice resolves and prints once', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A), watchedJob(JOB_B)]);
    const first = watch.onState(state(JOB_A, 5, 'completed', true));
    expect(ofType(first, 'print')).toHaveLength(1);
    expect(ofType(first, 'resolved')).toHaveLength(1);
    expect(watch.onState(state(JOB_A, 5, 'completed', true))).toEqual([]);
    // Its retained terminal event, delivered next at the same connect, is the same news: silent.
    expect(watch.onEvent(event(JOB_A, 5, 'completed'))).toEqual([]);
  });

  it('a non-terminal state is never printed', () => {
    const { watch } = connectedWatch();
    expect(watch.onState(state(JOB_A, 1, 'running'))).toEqual([]);
    expect(watch.onState(state(JOB_A, 2, 'pending', true))).toEqual([]);
  });

  it('the disk fallback resolves a job already terminal in the registry and prints one line', () => {
    const clock = new FakeClock();
    const watch = new WatchState({ jobs: [watchedJob(JOB_A)], monitor: false, now: clock.now });
    const line = { job_id: JOB_A, event: 'completed', seq: 7 };
    const actions = watch.resolveFromDisk(JOB_A, 'completed', line);
    expect(actions).toEqual([
      { type: 'print', jobId: JOB_A, payload: line, via: 'disk', seq: null, event: null },
      { type: 'resolved', jobId: JOB_A, status: 'completed', via: 'disk' },
      { type: 'exit', reason: 'all_completed' },
    ]);
  });

  it('the disk fallback does not print a job the wire already resolved', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A), watchedJob(JOB_B)]);
    watch.onEvent(event(JOB_A, 1, 'completed'));
    expect(watch.resolveFromDisk(JOB_A, 'completed', {})).toEqual([]);
  });

  it('an operator close in the registry ends the watch; its retained state is then a no-op', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A), watchedJob(JOB_B)]);
    const closed = watch.onOperatorClose(JOB_A, 'cancelled', { status: 'cancelled' });
    expect(closed.map((a) => a.type)).toEqual(['print', 'resolved']);
    expect(watch.onState(state(JOB_A, 4, 'cancelled', true))).toEqual([]);
    expect(exitOf(watch.onOperatorClose(JOB_B, 'error'))).toMatchObject({ reason: 'job_failed' });
  });

  it('messages for a job that is not watched are ignored outside monitor mode', () => {
    const { watch } = connectedWatch();
    expect(watch.onEvent(event(JOB_B, 1, 'completed'))).toEqual([]);
    expect(watch.isWatched(JOB_B)).toBe(false);
  });

  it('SIGINT on a --job watch exits 1: no outcome is not success', () => {
    const { watch } = connectedWatch();
    expect(watch.stop()).toEqual([{ type: 'exit', reason: 'stopped' }]);
  });

  it('refuses a --job watch with no job, and negative limits', () => {
    const clock = new FakeClock();
    expect(() => new WatchState({ jobs: [], monitor: false, now: clock.now })).toThrow(RangeError);
    expect(() => new WatchState({ jobs: [watchedJob(JOB_A, { timeoutSec: -1 })], monitor: false, now: clock.now })).toThrow(RangeError);
  });
});

describe('WatchState monitor mode (--all)', () => {
  const monitor = () => {
    const clock = new FakeClock();
    const watch = new WatchState({ jobs: [], monitor: true, now: clock.now });
    watch.onConnected();
    return { watch, clock };
  };

  it('watches jobs on first sight and never exits on a terminal', () => {
    const { watch, clock } = monitor();
    expect(watch.onEvent(event(JOB_A, 1, 'started')).map((a) => a.type)).toEqual(['print']);
    expect(watch.onEvent(event(JOB_A, 2, 'error')).map((a) => a.type)).toEqual(['print', 'resolved']);
    expect(watch.onState(state(JOB_B, 9, 'completed', true)).map((a) => a.type)).toEqual(['print', 'resolved']);
    expect(watch.isWatched(JOB_B)).toBe(true);
    clock.advance(24 * 3600_000);
    expect(watch.onTick()).toEqual([]);
    expect(watch.nextDeadline).toBeNull();
    expect(watch.closed).toBe(false);
  });

  it('stop() ends it with 0, once', () => {
    const { watch } = monitor();
    watch.onEvent(event(JOB_A, 1, 'error'));
    expect(watch.stop()).toEqual([{ type: 'exit', reason: 'stopped' }]);
    expect(watch.stop()).toEqual([]);
  });

  it('a job seen on the wire times out only when a flag says so, from first sight', () => {
    const clock = new FakeClock();
    const watch = new WatchState({ jobs: [], monitor: true, now: clock.now, flags: { idleTimeoutSec: 10 } });
    watch.onConnected();
    clock.advance(1000);
    expect(watch.addJob(JOB_A)).toBe(true);
    expect(watch.addJob(JOB_A)).toBe(false);
    expect(watch.nextDeadline).toBe(11_000);
    clock.ms = 11_000;
    expect(watch.onTick()).toEqual([{ type: 'exit', reason: 'idle_timeout', jobId: JOB_A, expired: 'idle' }]);
  });

  it('addJob outside monitor mode is a bug', () => {
    const { watch } = connectedWatch();
    expect(() => watch.addJob(JOB_B)).toThrow();
  });
});

describe('WatchState after exit', () => {
  it('returns nothing from any call once an exit was returned', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A), watchedJob(JOB_B)]);
    expect(exitOf(watch.onTick())).toBeUndefined();
    watch.onEvent(event(JOB_A, 1, 'completed'));
    expect(exitOf(watch.onEvent(event(JOB_B, 1, 'error')))).toMatchObject({ reason: 'job_failed' });
    clock.advance(10 * 3600_000);
    expect(watch.onTick()).toEqual([]);
    expect(watch.onEvent(event(JOB_B, 2, 'progress'))).toEqual([]);
    expect(watch.onState(state(JOB_B, 3, 'cancelled'))).toEqual([]);
    expect(watch.resolveFromDisk(JOB_B, 'error', {})).toEqual([]);
    expect(watch.onOperatorClose(JOB_B, 'error', {})).toEqual([]);
    expect(watch.onBrokerUnreachable()).toEqual([]);
    expect(watch.onConnected()).toEqual([]);
    expect(watch.stop()).toEqual([]);
    expect(watch.nextDeadline).toBeNull();
  });
});
