import { monotonicMs } from '../monotonic.ts';

// Beats are scheduled on the monotonic clock: on the wall clock, a step back of a day (NTP, a
// resumed laptop, `date -s`) put the next beat a day away and the watcher declared the agent idle.

/**
 * What the loop needs from the timer process: a narrow context (as bullmq's LockManager depends on
 * a worker context, not the worker), so that the clock is tested with fake timers and no broker.
 */
export interface HeartbeatLoopContext {
  /** Checked on every tick before a beat: a reason ends the loop (the watched process is gone). */
  stopReason(): string | undefined;
  /** One beat: commit + send. Resolves with a reason to end the loop (the beat was refused), else undefined. */
  beat(): Promise<string | undefined>;
}

export interface HeartbeatLoopOptions {
  periodMs: number;
  /** The job's `timeout_sec`: no agent is alive for longer than its wall budget. */
  lifetimeMs: number;
  /** How long a stop waits for an in-flight beat; one stuck on a dead broker must not keep us alive. */
  settleMs: number;
}

/**
 * The heartbeat's clock: a beat every period, never two at once (a beat still in flight when the
 * next is due, e.g. on a broker that is down, makes that tick skip), and a `closed` flag that every
 * late callback checks. `stop` lets the beat in flight finish — a beat that took its seq is delivered
 * before the timer exits — then resolves `stopped` with the reason.
 */
export class HeartbeatLoop {
  readonly stopped: Promise<string>;
  private resolveStopped!: (reason: string) => void;
  private closed = false;
  private tickTimer: NodeJS.Timeout | undefined;
  private lifetimeTimer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private nextAt: number | undefined;

  constructor(
    private readonly ctx: HeartbeatLoopContext,
    private readonly opts: HeartbeatLoopOptions,
  ) {
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve));
  }

  /** When the next beat is due (monotonic ms, `monotonicMs()`); undefined once stopped. */
  get nextBeatAt(): number | undefined {
    return this.closed ? undefined : this.nextAt;
  }

  get beating(): boolean {
    return this.inFlight !== undefined;
  }

  start(): void {
    if (this.closed || this.nextAt !== undefined) return;
    this.lifetimeTimer = setTimeout(() => this.stop('timeout'), this.opts.lifetimeMs);
    this.schedule(monotonicMs() + this.opts.periodMs);
  }

  /** Ends the loop; idempotent (the first reason wins). */
  stop(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.tickTimer);
    clearTimeout(this.lifetimeTimer);
    const inFlight = this.inFlight;
    if (inFlight === undefined) {
      this.resolveStopped(reason);
      return;
    }
    let settleTimer: NodeJS.Timeout | undefined;
    const settled = new Promise<void>((resolve) => (settleTimer = setTimeout(resolve, this.opts.settleMs)));
    void Promise.race([inFlight, settled]).then(() => {
      clearTimeout(settleTimer);
      this.resolveStopped(reason);
    });
  }

  private schedule(at: number): void {
    this.nextAt = at;
    this.tickTimer = setTimeout(() => this.tick(), Math.max(0, at - monotonicMs()));
  }

  private tick(): void {
    if (this.closed) return;
    const reason = this.ctx.stopReason();
    if (reason !== undefined) {
      this.stop(reason);
      return;
    }
    if (this.inFlight === undefined) {
      this.inFlight = this.ctx
        .beat()
        .then(
          (refusal) => {
            if (refusal !== undefined) this.stop(refusal);
          },
          // A failed beat (lock timeout, socket error) is retried by the next tick, not fatal.
          () => undefined,
        )
        .finally(() => {
          this.inFlight = undefined;
        });
    }
    // Beats keep to the grid of start + k × period; a late tick (a suspended machine) re-bases it
    // rather than firing the missed ones back to back.
    const now = monotonicMs();
    let next = (this.nextAt ?? now) + this.opts.periodMs;
    if (next <= now) next = now + this.opts.periodMs;
    this.schedule(next);
  }
}
