import { describe, expect, it } from 'vitest';
import { TIMESTAMP_SKEW_MS } from '../../../src/core/subscriber/replay-guard.ts';
import type { VerifiedEvent } from '../../../src/core/subscriber/verified-message.ts';
import { connectedWatch, event, exitOf, JOB_A, ofType, state, watchedJob } from './watch-fixtures.ts';

/**
 * The replay guard (issue 27): a genuine non-terminal event whose seq the job had already sent
 * before the watch began — the record's `last_seq` at the start, or a retained state of the first
 * connection — is audited `rejected`/`replayed`, not printed, and keeps no dead agent alive. Terminal
 * events and QoS 1 redeliveries are as before. A far-off timestamp is only audited.
 */

const replayed = (seq: number, event = 'progress') => ({ type: 'rejected', reason: 'replayed', seq, event });
const SEC = 1000;
const START_WALL_MS = Date.parse('2026-12-05T12:00:00Z');
const stamped = (seq: number, timestamp: string, name: VerifiedEvent['event'] = 'progress'): VerifiedEvent => ({ ...event(JOB_A, seq, name), timestamp });

describe('WatchState replay guard (issue 27)', () => {
  it("events at or below the record's last_seq at the start: audited replayed, not printed, no liveness", () => {
    const { watch, clock } = connectedWatch([watchedJob(JOB_A, { lastSeq: 6, idleTimeoutSec: 3, ackTimeoutSec: 0 })]);
    for (let seq = 1; seq <= 6; seq++) {
      clock.advance(2 * SEC);
      const actions = watch.onEvent(event(JOB_A, seq, seq === 1 ? 'started' : 'progress'));
      if (seq === 1) {
        // The first replay came 2 s in; the next one finds the idle clock (3 s from the start) run out.
        expect(actions).toHaveLength(1);
        expect(ofType(actions, 'audit')[0]?.entry).toMatchObject(replayed(1, 'started'));
      } else {
        expect(exitOf(actions)).toEqual({ type: 'exit', reason: 'idle_timeout', jobId: JOB_A, expired: 'idle' });
        break;
      }
    }
    // A fresh event (above the floor) is accepted and printed as ever.
    const { watch: fresh } = connectedWatch([watchedJob(JOB_A, { lastSeq: 6 })]);
    expect(ofType(fresh.onEvent(event(JOB_A, 3)), 'print')).toEqual([]);
    expect(ofType(fresh.onEvent(event(JOB_A, 7)), 'print').map((p) => p.seq)).toEqual([7]);
  });

  it('a terminal event at or below the floor still resolves the job (a late watcher of a finished job)', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A, { lastSeq: 6 })]);
    const actions = watch.onEvent(event(JOB_A, 6, 'completed'));
    expect(ofType(actions, 'print').map((p) => p.seq)).toEqual([6]);
    expect(exitOf(actions)).toEqual({ type: 'exit', reason: 'all_completed' });
  });

  it('a retained state of the first connection raises the floor; a live state does not', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A, { lastSeq: 0 })]);
    watch.onState(state(JOB_A, 5, 'running', true));
    expect(ofType(watch.onEvent(event(JOB_A, 5)), 'audit')[0]?.entry).toMatchObject(replayed(5));
    expect(ofType(watch.onEvent(event(JOB_A, 6)), 'print').map((p) => p.seq)).toEqual([6]);
    // Heartbeats and the agent's events race: a live state 9 may come before event 8.
    watch.onState(state(JOB_A, 9, 'running', false));
    expect(ofType(watch.onEvent(event(JOB_A, 8)), 'print').map((p) => p.seq)).toEqual([8]);
  });

  it('after a reconnect a retained state does not raise it: the events queued for the session are owed', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A, { lastSeq: 2 })]);
    watch.onEvent(event(JOB_A, 3));
    watch.onBrokerUnreachable();
    watch.onConnected();
    watch.onState(state(JOB_A, 6, 'running', true));
    for (const seq of [4, 5, 6]) expect(ofType(watch.onEvent(event(JOB_A, seq)), 'print').map((p) => p.seq)).toEqual([seq]);
  });

  it('once events flow, a retained state is an echo: it raises no floor, and a redelivery stays a duplicate', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A, { lastSeq: 0 })]);
    watch.onEvent(event(JOB_A, 1, 'started'));
    watch.onState(state(JOB_A, 3, 'running', true));
    expect(watch.onEvent(event(JOB_A, 1, 'started'))).toEqual([{ type: 'audit', jobId: JOB_A, entry: { type: 'duplicate', seq: 1, event: 'started' } }]);
    // Seqs 2 and 3, sent after 1 and delivered after the state, are owed.
    for (const seq of [3, 2]) expect(ofType(watch.onEvent(event(JOB_A, seq)), 'print').map((p) => p.seq)).toEqual([seq]);
  });

  it(`a timestamp more than ${TIMESTAMP_SKEW_MS / 60_000} min before the start or ahead of the clock is audited, never refused (contract §3)`, () => {
    let wall = START_WALL_MS;
    const { watch } = connectedWatch([watchedJob(JOB_A, { lastSeq: 0 })], { wallNow: () => wall });
    const old = watch.onEvent(stamped(1, '2026-12-05T10:59:59Z', 'started'));
    expect(old.map((a) => a.type)).toEqual(['audit', 'print']);
    expect(ofType(old, 'audit')[0]?.entry).toEqual({
      type: 'stale_timestamp',
      seq: 1,
      event: 'started',
      detail: 'timestamp 2026-12-05T10:59:59Z is more than 60 min before the watch began',
    });
    // Within the skew (a remote runner's clock behind ours): nothing to say.
    expect(watch.onEvent(stamped(2, '2026-12-05T11:30:00Z')).map((a) => a.type)).toEqual(['print']);
    wall += 10 * 60_000;
    expect(ofType(watch.onEvent(stamped(3, '2026-12-05T13:10:01Z')), 'audit')[0]?.entry).toMatchObject({
      type: 'stale_timestamp',
      detail: "timestamp 2026-12-05T13:10:01Z is more than 60 min ahead of this host's clock",
    });
    // A terminal event's stamp is the time it ended, however long ago: no audit.
    const done = watch.onEvent(stamped(4, '2026-12-05T09:00:00Z', 'completed'));
    expect(ofType(done, 'audit')).toEqual([]);
    expect(exitOf(done)).toEqual({ type: 'exit', reason: 'all_completed' });
  });
});
