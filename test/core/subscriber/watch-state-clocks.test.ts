import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WatchAction } from '../../../src/core/subscriber/watch-actions.ts';
import { WatchState } from '../../../src/core/subscriber/watch-state.ts';
import { connectedWatch, event, exitOf, FakeClock, JOB_A, JOB_B, state, watchedJob } from './watch-fixtures.ts';

const S = 1000;

describe('WatchState idle clock (contract §4, "Idle")', () => {
  it('expires exactly idle_timeout after the last accepted event, not a ms before', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { idleTimeoutSec: 60, ackTimeoutSec: 30 })]);
    clock.ms = 10 * S;
    watch.onEvent(event(JOB_A, 1, 'started'));
    expect(watch.nextDeadline).toBe(70 * S);
    clock.ms = 70 * S - 1;
    expect(watch.onTick()).toEqual([]);
    clock.ms = 70 * S;
    expect(watch.onTick()).toEqual([{ type: 'exit', reason: 'idle_timeout', jobId: JOB_A, expired: 'idle' }]);
  });

  it('allows ack_timeout + idle_timeout before the first accepted event', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { idleTimeoutSec: 60, ackTimeoutSec: 30 })]);
    clock.ms = 60 * S;
    expect(watch.onTick()).toEqual([]);
    clock.ms = 90 * S - 1;
    expect(watch.onTick()).toEqual([]);
    clock.ms = 90 * S;
    expect(exitOf(watch.onTick())).toMatchObject({ reason: 'idle_timeout' });
  });

  it('a duplicate does not renew the idle clock', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { idleTimeoutSec: 60, ackTimeoutSec: 0 })]);
    watch.onEvent(event(JOB_A, 1, 'started'));
    clock.ms = 50 * S;
    watch.onEvent(event(JOB_A, 1, 'started'));
    expect(watch.nextDeadline).toBe(60 * S);
  });

  it('a state newer than everything accepted renews it; an older or re-delivered one does not', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { idleTimeoutSec: 60, ackTimeoutSec: 0 })]);
    watch.onEvent(event(JOB_A, 3));
    clock.ms = 20 * S;
    watch.onState(state(JOB_A, 2, 'running'));
    expect(watch.nextDeadline).toBe(60 * S);
    watch.onState(state(JOB_A, 3, 'running'));
    expect(watch.nextDeadline).toBe(60 * S);
    watch.onState(state(JOB_A, 4, 'running'));
    expect(watch.nextDeadline).toBe(80 * S);
    clock.ms = 50 * S;
    watch.onState(state(JOB_A, 4, 'running', true));
    expect(watch.nextDeadline).toBe(80 * S);
    // Its event, arriving after the state, is still accepted and printed.
    expect(watch.onEvent(event(JOB_A, 4)).map((a) => a.type)).toEqual(['print']);
    expect(watch.nextDeadline).toBe(110 * S);
  });

  it('a retained state at connect does not cut the ack allowance short', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { idleTimeoutSec: 60, ackTimeoutSec: 180 })]);
    clock.ms = 1 * S;
    watch.onState(state(JOB_A, 1, 'running', true));
    expect(watch.nextDeadline).toBe(240 * S);
  });

  it('measures on the injected monotonic clock only, never on payload timestamps or Date.now', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const { watch, clock } = connectedWatch([watchedJob(JOB_A, { idleTimeoutSec: 60, ackTimeoutSec: 0 })]);
      watch.onEvent({ ...event(JOB_A, 1), payload: { timestamp: '1970-01-01T00:00:00Z' } });
      vi.setSystemTime(new Date('2100-01-01T00:00:00Z'));
      clock.ms = 59 * S;
      expect(watch.onTick()).toEqual([]);
      vi.setSystemTime(new Date('2000-01-01T00:00:00Z'));
      clock.ms = 60 * S;
      expect(exitOf(watch.onTick())).toMatchObject({ reason: 'idle_timeout' });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('WatchState wall clock (contract §4, "Wall clock")', () => {
  it('exits 2 when --timeout runs out from start, even while events keep coming', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { timeoutSec: 100, idleTimeoutSec: 60 })]);
    for (let t = 10; t < 100; t += 10) {
      clock.ms = t * S;
      watch.onEvent(event(JOB_A, t / 10));
    }
    expect(watch.nextDeadline).toBe(100 * S);
    clock.ms = 100 * S;
    expect(watch.onTick()).toEqual([{ type: 'exit', reason: 'wall_timeout', jobId: JOB_A, expired: 'wall' }]);
  });

  it('flags override every job, 0 disables a clock', () => {
    const jobs = [watchedJob(JOB_A, { timeoutSec: 100 }), watchedJob(JOB_B, { timeoutSec: 200 })];
    const { watch } = connectedWatch(jobs, { flags: { timeoutSec: 50, idleTimeoutSec: 0 } });
    expect(watch.nextDeadline).toBe(50 * S);
  });

  it('a deadline already passed wins over a message that arrives late', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { timeoutSec: 100 })]);
    clock.ms = 100 * S + 3;
    expect(exitOf(watch.onEvent(event(JOB_A, 1, 'completed')))).toMatchObject({ reason: 'wall_timeout' });
  });

  it('with several jobs the first clock to run out ends the watch, even after another failed', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { timeoutSec: 100 }), watchedJob(JOB_B, { timeoutSec: 50 })]);
    watch.onEvent(event(JOB_A, 1, 'error'));
    clock.ms = 50 * S;
    expect(exitOf(watch.onTick())).toMatchObject({ reason: 'wall_timeout', jobId: JOB_B });
  });
});

describe('WatchState broker reachability (contract §4, "Disk fallback")', () => {
  it('exits 3 when the first connection keeps failing for 5 s', () => {
    const clock = new FakeClock();
    const watch = new WatchState({ jobs: [watchedJob(JOB_A)], monitor: false, now: clock.now });
    expect(watch.nextDeadline).toBe(5 * S);
    clock.ms = 1 * S;
    expect(watch.onBrokerUnreachable()).toEqual([]);
    clock.ms = 5 * S - 1;
    expect(watch.onTick()).toEqual([]);
    clock.ms = 5 * S;
    expect(watch.onTick()).toEqual([{ type: 'exit', reason: 'broker_unreachable' }]);
  });

  it('a connection that comes only after the grace is too late: still 3', () => {
    const clock = new FakeClock();
    const watch = new WatchState({ jobs: [watchedJob(JOB_A)], monitor: false, now: clock.now });
    clock.ms = 5 * S + 1;
    expect(exitOf(watch.onConnected())).toMatchObject({ reason: 'broker_unreachable' });
  });

  it('monitor mode also exits 3 when it never reaches the broker', () => {
    const clock = new FakeClock();
    const watch = new WatchState({ jobs: [], monitor: true, now: clock.now });
    clock.ms = 5 * S;
    expect(exitOf(watch.onTick())).toMatchObject({ reason: 'broker_unreachable' });
  });

  it('a first connection within the grace cancels that deadline', () => {
    const clock = new FakeClock();
    const watch = new WatchState({ jobs: [watchedJob(JOB_A, { timeoutSec: 100, idleTimeoutSec: 0 })], monitor: false, now: clock.now });
    clock.ms = 4 * S;
    watch.onConnected();
    expect(watch.nextDeadline).toBe(100 * S);
  });

  it('a timeout that expires while the broker is unreachable exits 3, not 2', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { idleTimeoutSec: 60, ackTimeoutSec: 0 })]);
    watch.onEvent(event(JOB_A, 1, 'started'));
    clock.ms = 30 * S;
    watch.onBrokerUnreachable();
    clock.ms = 60 * S;
    expect(watch.onTick()).toEqual([{ type: 'exit', reason: 'broker_unreachable', jobId: JOB_A, expired: 'idle' }]);
  });

  it('a timeout that expired before the connection was lost is still a 2', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { timeoutSec: 100 })]);
    clock.ms = 101 * S;
    expect(exitOf(watch.onBrokerUnreachable())).toMatchObject({ reason: 'wall_timeout' });
  });

  it('back in touch before the deadline: a timeout is a 2 again', () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { timeoutSec: 100 })]);
    clock.ms = 10 * S;
    watch.onBrokerUnreachable();
    clock.ms = 20 * S;
    watch.onConnected();
    clock.ms = 100 * S;
    expect(exitOf(watch.onTick())).toMatchObject({ reason: 'wall_timeout' });
  });

  it('the disk fallback on a connection failure can still resolve the watch', () => {
    const clock = new FakeClock();
    const watch = new WatchState({ jobs: [watchedJob(JOB_A)], monitor: false, now: clock.now });
    clock.ms = 2 * S;
    watch.onBrokerUnreachable();
    expect(exitOf(watch.resolveFromDisk(JOB_A, 'error', { status: 'error' }))).toMatchObject({ reason: 'job_failed' });
  });
});

describe('WatchState.nextDeadline', () => {
  it('is the earliest of the first-connect grace and every unresolved job clock', () => {
    const clock = new FakeClock();
    const jobs = [watchedJob(JOB_A, { timeoutSec: 300, idleTimeoutSec: 60, ackTimeoutSec: 10 }), watchedJob(JOB_B, { timeoutSec: 40 })];
    const watch = new WatchState({ jobs, monitor: false, now: clock.now });
    expect(watch.nextDeadline).toBe(5 * S);
    watch.onConnected();
    expect(watch.nextDeadline).toBe(40 * S);
    watch.onEvent(event(JOB_B, 1, 'completed'));
    expect(watch.nextDeadline).toBe(70 * S);
    clock.ms = 20 * S;
    watch.onEvent(event(JOB_A, 1, 'started'));
    expect(watch.nextDeadline).toBe(80 * S);
  });

  it('is null when no clock runs', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A, { timeoutSec: 0, idleTimeoutSec: 0 })]);
    expect(watch.nextDeadline).toBeNull();
  });

  describe('driving one timer from it, as the adapter does', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('reaches the idle timeout with a single re-armed timer', () => {
      vi.useFakeTimers();
      const origin = performance.now();
      const now = () => performance.now() - origin;
      const watch = new WatchState({ jobs: [watchedJob(JOB_A, { idleTimeoutSec: 60, ackTimeoutSec: 0 })], monitor: false, now });
      watch.onConnected();
      const seen: WatchAction[] = [];
      let timer: NodeJS.Timeout | undefined;
      const arm = () => {
        clearTimeout(timer);
        const at = watch.nextDeadline;
        if (at !== null) timer = setTimeout(() => (seen.push(...watch.onTick()), arm()), Math.max(0, at - now()));
      };
      arm();
      vi.advanceTimersByTime(30 * S);
      watch.onEvent(event(JOB_A, 1, 'started'));
      arm();
      vi.advanceTimersByTime(60 * S - 1);
      expect(seen).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(exitOf(seen)).toMatchObject({ reason: 'idle_timeout' });
      expect(vi.getTimerCount()).toBe(0);
    });
  });
});
