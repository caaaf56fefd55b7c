/** What the tracker made of an event's seq. */
export type SeqVerdict =
  | { kind: 'duplicate' }
  /** `expectedSeq` is set when the seq jumped beyond last-seen + 1 (a `seq_gap`). */
  | { kind: 'accepted'; expectedSeq: number | null };

/**
 * Seq bookkeeping for one job's current attempt (contract §4, "Duplicates and order", "Gaps",
 * "State"). Wire order is not seq order: heartbeats and the agent's own events race, so an unseen
 * lower seq is accepted, and only a seq accepted before is a duplicate.
 */
export class SeqTracker {
  readonly #accepted = new Set<number>();
  /** Highest accepted event seq, or the record's `last_seq`; null until a baseline exists. */
  #lastSeen: number | null;
  /** Highest seq known from any source (events, states, baseline): what "newer" is measured against. */
  #newest: number;

  constructor(baseline?: number) {
    this.#lastSeen = baseline ?? null;
    this.#newest = baseline ?? 0;
  }

  hasAccepted(seq: number): boolean {
    return this.#accepted.has(seq);
  }

  acceptEvent(seq: number): SeqVerdict {
    if (this.#accepted.has(seq)) return { kind: 'duplicate' };
    this.#accepted.add(seq);
    const expected = this.#lastSeen === null ? null : this.#lastSeen + 1;
    const gap = expected !== null && seq > expected;
    if (this.#lastSeen === null || seq > this.#lastSeen) this.#lastSeen = seq;
    if (seq > this.#newest) this.#newest = seq;
    return { kind: 'accepted', expectedSeq: gap ? expected : null };
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
