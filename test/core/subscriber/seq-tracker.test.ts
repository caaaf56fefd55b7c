import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SeqTracker } from '../../../src/core/subscriber/seq-tracker.ts';

describe('SeqTracker memory', () => {
  it('a long run of events in order holds no seq one by one', () => {
    const seqs = new SeqTracker();
    for (let seq = 1; seq <= 100_000; seq++) expect(seqs.acceptEvent(seq).kind).toBe('accepted');
    expect(seqs.scatteredCount).toBe(0);
    expect(seqs.acceptEvent(99_999).kind).toBe('duplicate');
    expect(seqs.acceptEvent(1).kind).toBe('duplicate');
  });

  it('out of order within a window: still exact, and folded once the holes fill', () => {
    const seqs = new SeqTracker();
    for (const seq of [3, 1, 5, 2, 4]) expect(seqs.acceptEvent(seq).kind).toBe('accepted');
    for (const seq of [1, 2, 3, 4, 5]) expect(seqs.acceptEvent(seq).kind).toBe('duplicate');
    expect(seqs.scatteredCount).toBe(0);
    expect(seqs.hasAccepted(6)).toBe(false);
  });

  it('a seq that never arrives: memory stays bounded, newer seqs stay exact', () => {
    const seqs = new SeqTracker();
    seqs.acceptEvent(1);
    // seq 2 is lost for good.
    for (let seq = 3; seq <= 50_000; seq++) seqs.acceptEvent(seq);
    expect(seqs.scatteredCount).toBeLessThanOrEqual(4_096);
    expect(seqs.acceptEvent(49_999).kind).toBe('duplicate');
    expect(seqs.acceptEvent(50_001).kind).toBe('accepted');
  });

  it('a lost seq that arrives soon after is accepted, not a duplicate', () => {
    const seqs = new SeqTracker();
    seqs.acceptEvent(1);
    for (let seq = 3; seq <= 1_000; seq++) seqs.acceptEvent(seq);
    expect(seqs.acceptEvent(2).kind).toBe('accepted');
    expect(seqs.scatteredCount).toBe(0);
  });
});

describe('SeqTracker verdicts', () => {
  it('any order, below the fold: what a set of every accepted seq says (duplicates, gaps against the highest seen)', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
        fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 80 }),
        (baseline, seqs) => {
          const tracker = new SeqTracker(baseline);
          const accepted = new Set<number>();
          let lastSeen = baseline ?? null;
          for (const seq of seqs) {
            const verdict = tracker.acceptEvent(seq);
            if (accepted.has(seq)) {
              expect(verdict).toEqual({ kind: 'duplicate' });
              continue;
            }
            accepted.add(seq);
            const gap = lastSeen !== null && seq > lastSeen + 1;
            expect(verdict).toEqual({ kind: 'accepted', expectedSeq: gap ? lastSeen! + 1 : null });
            if (lastSeen === null || seq > lastSeen) lastSeen = seq;
            for (let s = 1; s <= 41; s++) expect(tracker.hasAccepted(s)).toBe(accepted.has(s));
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});
