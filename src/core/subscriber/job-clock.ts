import type { ClockKind } from './watch-actions.ts';

/** A job's limits in ms; null disables that clock. */
export interface JobLimitsMs {
  wallMs: number | null;
  idleMs: number | null;
  /** Extra idle allowance before the first accepted event (the agent still has to start). */
  ackMs: number;
}

export interface ClockExpiry {
  kind: ClockKind;
  at: number;
}

/**
 * The wall and idle deadlines of one job, on the monotonic clock. A deadline is reached when
 * `now >= deadline`: that instant is what `nextDeadline` reports, so one timer set for it is enough.
 */
export class JobClock {
  readonly wallDeadline: number | null;
  #idleDeadline: number | null;
  readonly #idleMs: number | null;

  constructor(startedAt: number, limits: JobLimitsMs) {
    this.wallDeadline = limits.wallMs === null ? null : startedAt + limits.wallMs;
    this.#idleMs = limits.idleMs;
    // Contract §4: before the first accepted event the allowance is ack_timeout + idle_timeout.
    this.#idleDeadline = limits.idleMs === null ? null : startedAt + limits.ackMs + limits.idleMs;
  }

  get idleDeadline(): number | null {
    return this.#idleDeadline;
  }

  /** An accepted event: idle is measured from now on, and the ack allowance is spent. */
  markEvent(now: number): void {
    if (this.#idleMs !== null) this.#idleDeadline = now + this.#idleMs;
  }

  /**
   * A state newer than anything accepted. It proves the agent is alive but is not an event
   * (its own event may still be in flight), so it extends the allowance and never shortens it:
   * a retained state seen at connect must not cut the ack allowance of a job that has not started.
   */
  renew(now: number): void {
    if (this.#idleMs !== null && this.#idleDeadline !== null) {
      this.#idleDeadline = Math.max(this.#idleDeadline, now + this.#idleMs);
    }
  }

  get nextDeadline(): number | null {
    return minOf(this.wallDeadline, this.#idleDeadline);
  }

  /** The clock that ran out by `now` (the earlier one; wall on a tie), or null. */
  expiry(now: number): ClockExpiry | null {
    const wall = this.wallDeadline;
    const idle = this.#idleDeadline;
    const wallDue = wall !== null && now >= wall;
    const idleDue = idle !== null && now >= idle;
    if (wallDue && (!idleDue || wall <= idle)) return { kind: 'wall', at: wall };
    if (idleDue) return { kind: 'idle', at: idle };
    return null;
  }
}

/** The earlier of two deadlines; null stands for none. */
export function minOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return b < a ? b : a;
}
