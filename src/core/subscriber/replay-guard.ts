/**
 * How far an event's own `timestamp` may lie before the watch began (or ahead of this host's clock)
 * without a word: more than the skew between two hosts that keep time at all (a remote runner's),
 * less than the age of a capture worth replaying.
 */
export const TIMESTAMP_SKEW_MS = 60 * 60 * 1000;

/**
 * Tells old news from fresh (issue 27): someone on the broker who kept a job's signed events can
 * send them again after the agent died, and each would pass the HMAC and the attempt check and keep
 * the job alive. An event is fresh only if its seq is above what was known of the job when the watch
 * began (the floor).
 *
 * The floor is the record's `last_seq` at the start of the watch, raised by the retained states that
 * come on the first connection before any event of the job was accepted: both say which seqs the job
 * had sent before anyone here listened. A live state does not raise it (heartbeats and the agent's
 * events race, so a lower seq may still be on its way), nor does a retained one once events flow or
 * after a reconnect (the events queued for this session while it was cut off sit below it and are
 * owed). The floor is a snapshot: the record moves ahead of the wire (contract §3, disk first), so
 * following it would take every event for a replay.
 *
 * Terminal events are never judged here: a retained `completed` of a job that ended before the watch
 * began is how a late watcher learns the outcome (contract §4).
 *
 * The timestamp only draws an audit line (`stale_timestamp`), never a refusal: contract §3 makes it
 * advisory, and an agent on a host whose clock is wrong (1970 on a board without a clock) is still
 * an agent to watch. The seq is what decides.
 */
export class ReplayGuard {
  #floor: number;
  readonly #oldestMs: number;
  #accepted = false;

  /** `lastSeq`: the record's when the watch began (0 without one); `startedAtWallMs`: the wall clock then. */
  constructor(lastSeq: number, startedAtWallMs: number) {
    this.#floor = lastSeq;
    this.#oldestMs = startedAtWallMs - TIMESTAMP_SKEW_MS;
  }

  /** A retained state of the first connection. */
  noteRetainedState(seq: number): void {
    if (!this.#accepted && seq > this.#floor) this.#floor = seq;
  }

  /** An event of the job was accepted: the watch is live, and retained states are echoes from now on. */
  noteAccepted(): void {
    this.#accepted = true;
  }

  /** Why a non-terminal event not accepted before is old news, or null when it is fresh. */
  replayed(seq: number): string | null {
    return seq <= this.#floor ? `seq ${seq} is at or below ${this.#floor}, sent before the watch began` : null;
  }

  /** What is odd about an accepted event's timestamp, for the audit, or null. `nowWallMs`: this host's clock now. */
  timestampOddity(timestamp: string | undefined, nowWallMs: number): string | null {
    const at = timestamp === undefined ? Number.NaN : Date.parse(timestamp);
    const minutes = TIMESTAMP_SKEW_MS / 60_000;
    if (at < this.#oldestMs) return `timestamp ${timestamp} is more than ${minutes} min before the watch began`;
    if (at > nowWallMs + TIMESTAMP_SKEW_MS) return `timestamp ${timestamp} is more than ${minutes} min ahead of this host's clock`;
    return null;
  }
}
