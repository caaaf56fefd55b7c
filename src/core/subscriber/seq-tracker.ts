/** What the tracker made of an event's seq. */
export type SeqVerdict =
  | { kind: 'duplicate' }
  /** `expectedSeq` is set when the seq jumped beyond last-seen + 1 (a `seq_gap`). */
  | { kind: 'accepted'; expectedSeq: number | null };

/**
 * Accepted seqs kept one by one above the contiguous run. A seq that never arrives stops the run; past
 * this many, the lower half is folded into it, so a long watch holds at most this many numbers per job
 * (a seq lost for that long and then delivered after all is taken for a duplicate).
 */
const MAX_SCATTERED = 4_096;

// Verdicts hold no per-event data but a gap's expected seq: the common two are shared, not allocated per event.
const DUPLICATE: SeqVerdict = Object.freeze({ kind: 'duplicate' });
const IN_ORDER: SeqVerdict = Object.freeze({ kind: 'accepted', expectedSeq: null });

/**
 * Seq bookkeeping for one job's current attempt (contract §4, "Duplicates and order", "Gaps",
 * "State"). Wire order is not seq order: heartbeats and the agent's own events race, so an unseen
 * lower seq is accepted, and only a seq accepted before is a duplicate.
 *
 * What was accepted is a floor (every seq up to it) and the scattered seqs above it, not a set of
 * every seq: a monitor that runs for weeks must not grow by a number per event.
 */
export class SeqTracker {
  /** Every seq ≤ this counts as accepted. */
  #floor = 0;
  readonly #scattered = new Set<number>();
  /** Highest accepted event seq, or the record's `last_seq`; null until a baseline exists. */
  #lastSeen: number | null;
  /** Highest seq known from any source (events, states, baseline): what "newer" is measured against. */
  #newest: number;

  constructor(baseline?: number) {
    this.#lastSeen = baseline ?? null;
    this.#newest = baseline ?? 0;
  }

  hasAccepted(seq: number): boolean {
    return seq <= this.#floor || this.#scattered.has(seq);
  }

  /** How many seqs are held one by one (the memory the tracker costs). */
  get scatteredCount(): number {
    return this.#scattered.size;
  }

  acceptEvent(seq: number): SeqVerdict {
    if (this.hasAccepted(seq)) return DUPLICATE;
    this.#remember(seq);
    const expected = this.#lastSeen === null ? null : this.#lastSeen + 1;
    const gap = expected !== null && seq > expected;
    if (this.#lastSeen === null || seq > this.#lastSeen) this.#lastSeen = seq;
    if (seq > this.#newest) this.#newest = seq;
    return gap ? { kind: 'accepted', expectedSeq: expected } : IN_ORDER;
  }

  #remember(seq: number): void {
    // The next seq of the run, with room left below the fold: what adding it and then folding the
    // run would do, without the set (the common case, events in order).
    if (seq === this.#floor + 1 && this.#scattered.size < MAX_SCATTERED) {
      this.#floor = seq;
      while (this.#scattered.delete(this.#floor + 1)) this.#floor++;
      return;
    }
    this.#scattered.add(seq);
    if (this.#scattered.size > MAX_SCATTERED) {
      const sorted = [...this.#scattered].sort((a, b) => a - b);
      this.#floor = sorted[sorted.length >> 1]!;
      for (const s of sorted) if (s <= this.#floor) this.#scattered.delete(s);
    }
    while (this.#scattered.delete(this.#floor + 1)) this.#floor++;
  }

  /**
   * Records a state's seq; true when it is newer than every accepted event and every state seen
   * so far. A re-delivered retained state carries a seq already noted, so it returns false.
   */
  noteState(seq: number): boolean {
    if (seq <= this.#newest) return false;
    this.#newest = seq;
    return true;
  }
}
