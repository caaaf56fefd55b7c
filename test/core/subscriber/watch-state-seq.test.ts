import { describe, expect, it } from 'vitest';
import { SeqTracker } from '../../../src/core/subscriber/seq-tracker.ts';
import { connectedWatch, event, JOB_A, ofType, watchedJob } from './watch-fixtures.ts';

describe('WatchState seq handling (contract §4, "Duplicates and order", "Gaps")', () => {
  it('drops a seq already accepted and audits it as duplicate', () => {
    const { watch } = connectedWatch();
    watch.onEvent(event(JOB_A, 1, 'started'));
    expect(watch.onEvent(event(JOB_A, 1, 'started'))).toEqual([{ type: 'audit', jobId: JOB_A, entry: { type: 'duplicate', seq: 1, event: 'started' } }]);
  });

  it('accepts and prints an unseen lower seq: wire order is not seq order', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A, { lastSeq: 0 })]);
    watch.onEvent(event(JOB_A, 1, 'started'));
    watch.onEvent(event(JOB_A, 3));
    const late = watch.onEvent(event(JOB_A, 2));
    expect(late).toEqual([{ type: 'print', jobId: JOB_A, payload: event(JOB_A, 2).payload, via: 'event', seq: 2, event: 'progress' }]);
  });

  it('audits a seq beyond last-seen + 1 as seq_gap and still accepts it', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A, { lastSeq: 0 })]);
    watch.onEvent(event(JOB_A, 1, 'started'));
    const actions = watch.onEvent(event(JOB_A, 4));
    expect(actions.map((a) => a.type)).toEqual(['audit', 'print']);
    expect(ofType(actions, 'audit')[0]?.entry).toEqual({ type: 'seq_gap', seq: 4, expected: 2 });
  });

  it("measures gaps from the record's last_seq when the watch starts mid-job", () => {
    const { watch } = connectedWatch([watchedJob(JOB_A, { lastSeq: 5 })]);
    expect(ofType(watch.onEvent(event(JOB_A, 6)), 'audit')).toEqual([]);
    const { watch: fromZero } = connectedWatch([watchedJob(JOB_A, { lastSeq: 0 })]);
    expect(ofType(fromZero.onEvent(event(JOB_A, 3)), 'audit')[0]?.entry).toEqual({ type: 'seq_gap', seq: 3, expected: 1 });
  });

  it('without a baseline the first accepted event sets it', () => {
    const { watch } = connectedWatch();
    expect(ofType(watch.onEvent(event(JOB_A, 9)), 'audit')).toEqual([]);
    expect(ofType(watch.onEvent(event(JOB_A, 11)), 'audit')[0]?.entry).toMatchObject({ type: 'seq_gap', expected: 10 });
  });

  it('ignores events after the terminal one: no print, audited', () => {
    const { watch } = connectedWatch([watchedJob(JOB_A), watchedJob('cccccccc')]);
    watch.onEvent(event(JOB_A, 1, 'started'));
    watch.onEvent(event(JOB_A, 2, 'completed'));
    expect(watch.onEvent(event(JOB_A, 3))).toEqual([
      { type: 'audit', jobId: JOB_A, entry: { type: 'ignored_after_terminal', seq: 3, event: 'progress', status: 'completed' } },
    ]);
    // A second terminal is not a new outcome either.
    expect(ofType(watch.onEvent(event(JOB_A, 4, 'error')), 'resolved')).toEqual([]);
    // A redelivered terminal event is a duplicate.
    expect(ofType(watch.onEvent(event(JOB_A, 2, 'completed')), 'audit')[0]?.entry.type).toBe('duplicate');
  });
});

describe('SeqTracker', () => {
  it('calls a state newer only when above every event and state seen', () => {
    const seqs = new SeqTracker(2);
    expect(seqs.noteState(2)).toBe(false);
    expect(seqs.noteState(3)).toBe(true);
    expect(seqs.noteState(3)).toBe(false);
    seqs.acceptEvent(5);
    expect(seqs.noteState(4)).toBe(false);
    expect(seqs.noteState(6)).toBe(true);
  });
});
