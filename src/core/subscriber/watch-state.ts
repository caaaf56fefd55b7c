import { type TerminalStatus, isTerminalStatus, terminalStatusOf } from '../vocabulary.ts';
import type { MonotonicClock } from './clock.ts';
import { JobClock, minOf, type JobLimitsMs } from './job-clock.ts';
import { ReplayGuard } from './replay-guard.ts';
import { SeqTracker } from './seq-tracker.ts';
import type { VerifiedEvent, VerifiedState, WatchedJob } from './verified-message.ts';
import { outcomeOf, timeoutExit, type ExitAction, type WatchAction, type WatchSource } from './watch-actions.ts';

/** `--timeout`, `--idle-timeout`, `--ack-timeout`: a given flag overrides every job's value. */
export interface WatchTimeoutFlags {
  timeoutSec?: number;
  idleTimeoutSec?: number;
  ackTimeoutSec?: number;
}

export interface WatchStateOptions {
  jobs: readonly WatchedJob[];
  /** `--all`: jobs are watched on first sight and a terminal never ends the watch. */
  monitor: boolean;
  now: MonotonicClock;
  flags?: WatchTimeoutFlags;
  /** How long a first connection may fail before exit 3 (contract §4: "about 5 s"). */
  firstConnectGraceMs?: number;
  /** The wall clock (ms since the epoch), for the audit of odd event timestamps only; default `Date.now`. */
  wallNow?: () => number;
}

export const DEFAULT_FIRST_CONNECT_GRACE_MS = 5_000;

interface Resolution {
  status: TerminalStatus;
  via: WatchSource;
  /** The seq of the message that resolved the job; null for the registry. */
  seq: number | null;
}

interface TrackedJob {
  jobId: string;
  seqs: SeqTracker;
  replay: ReplayGuard;
  clock: JobClock;
  resolution: Resolution | null;
}

/**
 * The subscriber's decision core (contract §4): fed verified messages, connection news and clock
 * ticks, it answers with actions and performs no IO. The clock is injected and every input first
 * settles the deadlines that passed, so the outcome depends on the clock alone, never on how late a
 * timer fired; once an exit has been returned, every call returns nothing.
 */
export class WatchState {
  readonly #monitor: boolean;
  readonly #now: MonotonicClock;
  readonly #flags: WatchTimeoutFlags;
  readonly #jobs = new Map<string, TrackedJob>();
  /**
   * The earliest deadline of the unresolved jobs (null: none has one), kept as deadlines move so
   * that a monitor of many jobs does not walk them all twice per message; undefined when it must be
   * computed again (the job that held it moved its deadline later, or was resolved).
   */
  #jobsDeadline: number | null | undefined = null;
  #firstConnectDeadline: number | null;
  readonly #wallNow: () => number;
  /** Wall-clock ms at the start: what the replay guard measures event timestamps against. */
  readonly #startedAtWallMs: number;
  #connected = false;
  #everConnected = false;
  /** A CONNACK came after a first one: retained states no longer raise the replay floor (replay-guard.ts). */
  #reconnected = false;
  #closed = false;

  constructor(options: WatchStateOptions) {
    if (!options.monitor && options.jobs.length === 0) throw new RangeError('WatchState: no job to watch');
    this.#monitor = options.monitor;
    this.#now = options.now;
    this.#flags = options.flags ?? {};
    const startedAt = this.#now();
    this.#wallNow = options.wallNow ?? Date.now;
    this.#startedAtWallMs = this.#wallNow();
    this.#firstConnectDeadline = startedAt + (options.firstConnectGraceMs ?? DEFAULT_FIRST_CONNECT_GRACE_MS);
    for (const job of options.jobs) {
      if (this.#jobs.has(job.jobId)) continue;
      const limits = limitsMs({
        timeoutSec: this.#flags.timeoutSec ?? job.timeoutSec,
        idleTimeoutSec: this.#flags.idleTimeoutSec ?? job.idleTimeoutSec,
        ackTimeoutSec: this.#flags.ackTimeoutSec ?? job.ackTimeoutSec,
      });
      this.#track(job.jobId, startedAt, limits, job.lastSeq);
    }
  }

  /** True once an exit action has been returned. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The earliest monotonic ms at which `onTick` can change something; null when nothing is due. */
  get nextDeadline(): number | null {
    if (this.#closed) return null;
    return minOf(this.#firstConnectDeadline, this.#earliestJobDeadline());
  }

  /** Jobs still awaiting an outcome: the ones whose registry record the adapter should poll. */
  get unresolvedJobIds(): string[] {
    return [...this.#jobs.values()].filter((j) => !j.resolution).map((j) => j.jobId);
  }

  isWatched(jobId: string): boolean {
    return this.#jobs.has(jobId);
  }

  /**
   * Monitor mode: watch a job from now on. Its clocks come from the flags only (a job seen on the
   * wire has no `--job` the user asked limits for), so without flags it never times out.
   * `lastSeq` is the seq baseline for gaps, when the caller knows one. Returns false when it was
   * already watched.
   */
  addJob(jobId: string, lastSeq?: number): boolean {
    if (!this.#monitor) throw new Error('WatchState.addJob: only in monitor mode (--all)');
    if (this.#closed || this.#jobs.has(jobId)) return false;
    const limits = limitsMs({
      timeoutSec: this.#flags.timeoutSec ?? 0,
      idleTimeoutSec: this.#flags.idleTimeoutSec ?? 0,
      ackTimeoutSec: this.#flags.ackTimeoutSec ?? 0,
    });
    this.#track(jobId, this.#now(), limits, lastSeq);
    return true;
  }

  onEvent(msg: VerifiedEvent): WatchAction[] {
    const expired = this.#settleClocks();
    if (expired) return expired;
    const job = this.#lookup(msg.jobId);
    if (!job) return [];
    if (job.resolution) return this.#afterTerminal(job, job.resolution, msg);
    const terminal = terminalStatusOf(msg.event) !== null;
    const replayed = terminal || job.seqs.hasAccepted(msg.seq) ? null : job.replay.replayed(msg.seq);
    if (replayed) {
      // Old news sent again: neither printed nor taken as a sign of life (issue 27).
      return [{ type: 'audit', jobId: job.jobId, entry: { type: 'rejected', reason: 'replayed', seq: msg.seq, event: msg.event, detail: replayed } }];
    }
    const verdict = job.seqs.acceptEvent(msg.seq);
    if (verdict.kind === 'duplicate') {
      return [{ type: 'audit', jobId: job.jobId, entry: { type: 'duplicate', seq: msg.seq, event: msg.event } }];
    }
    job.replay.noteAccepted();
    const actions: WatchAction[] = [];
    const oddStamp = terminal ? null : job.replay.timestampOddity(msg.timestamp, this.#wallNow());
    if (oddStamp) actions.push({ type: 'audit', jobId: job.jobId, entry: { type: 'stale_timestamp', seq: msg.seq, event: msg.event, detail: oddStamp } });
    if (verdict.expectedSeq !== null) {
      actions.push({ type: 'audit', jobId: job.jobId, entry: { type: 'seq_gap', seq: msg.seq, expected: verdict.expectedSeq } });
    }
    const before = job.clock.nextDeadline;
    job.clock.markEvent(this.#now());
    this.#deadlineMoved(before, job.clock.nextDeadline);
    actions.push({ type: 'print', jobId: job.jobId, payload: msg.payload, wireText: msg.wireText, via: 'event', seq: msg.seq, event: msg.event });
    const status = terminalStatusOf(msg.event);
    if (status) actions.push(...this.#resolve(job, { status, via: 'event', seq: msg.seq }));
    return actions;
  }

  onState(msg: VerifiedState): WatchAction[] {
    const expired = this.#settleClocks();
    if (expired) return expired;
    const job = this.#lookup(msg.jobId);
    // States echo events; after the job is resolved they carry nothing new, so no audit either.
    if (!job || job.resolution) return [];
    if (isTerminalStatus(msg.status)) {
      const print: WatchAction = { type: 'print', jobId: job.jobId, payload: msg.payload, wireText: msg.wireText, via: 'state', seq: msg.seq, event: null };
      return [print, ...this.#resolve(job, { status: msg.status, via: 'state', seq: msg.seq })];
    }
    if (msg.retained && !this.#reconnected) job.replay.noteRetainedState(msg.seq);
    if (job.seqs.noteState(msg.seq)) {
      const before = job.clock.nextDeadline;
      job.clock.renew(this.#now());
      this.#deadlineMoved(before, job.clock.nextDeadline);
    }
    return [];
  }

  /** Checks the clocks; the adapter calls it when the timer set for `nextDeadline` fires. */
  onTick(): WatchAction[] {
    return this.#settleClocks() ?? [];
  }

  /** Disk fallback (at start, on each connection failure): the registry says the job is terminal. */
  resolveFromDisk(jobId: string, status: TerminalStatus, payload: unknown): WatchAction[] {
    return this.#resolveExternally(jobId, status, payload, 'disk');
  }

  /**
   * An operator close seen in the registry while the watch runs. `payload`, when given, is printed
   * (a state line built from the record); a close that also arrives as a retained state is a no-op.
   */
  onOperatorClose(jobId: string, status: TerminalStatus, payload?: unknown): WatchAction[] {
    return this.#resolveExternally(jobId, status, payload, 'operator');
  }

  /** A connection attempt failed or the connection was lost. */
  onBrokerUnreachable(): WatchAction[] {
    const expired = this.#settleClocks();
    if (expired) return expired;
    this.#connected = false;
    return [];
  }

  /** The broker acknowledged a connection (CONNACK). */
  onConnected(): WatchAction[] {
    const expired = this.#settleClocks();
    if (expired) return expired;
    this.#connected = true;
    if (this.#everConnected) this.#reconnected = true;
    this.#everConnected = true;
    this.#firstConnectDeadline = null;
    return [];
  }

  /** SIGINT/SIGTERM, or the program running the watch ends it (what that means is the caller's to say). */
  stop(): WatchAction[] {
    if (this.#closed) return [];
    return [this.#exit({ type: 'exit', reason: 'stopped' })];
  }

  #track(jobId: string, startedAt: number, limits: JobLimitsMs, lastSeq: number | undefined): TrackedJob {
    const job: TrackedJob = {
      jobId,
      seqs: new SeqTracker(lastSeq),
      replay: new ReplayGuard(lastSeq ?? 0, this.#startedAtWallMs),
      clock: new JobClock(startedAt, limits),
      resolution: null,
    };
    this.#jobs.set(jobId, job);
    this.#deadlineMoved(null, job.clock.nextDeadline);
    return job;
  }

  /** Keeps `#jobsDeadline` right when an unresolved job's deadline went from `before` to `after` (null: none). */
  #deadlineMoved(before: number | null, after: number | null): void {
    const earliest = this.#jobsDeadline;
    if (earliest === undefined || before === after) return;
    if (after !== null && (earliest === null || after < earliest)) this.#jobsDeadline = after;
    else if (before !== null && before === earliest) this.#jobsDeadline = undefined;
  }

  #earliestJobDeadline(): number | null {
    if (this.#jobsDeadline !== undefined) return this.#jobsDeadline;
    let next: number | null = null;
    for (const job of this.#jobs.values()) if (!job.resolution) next = minOf(next, job.clock.nextDeadline);
    this.#jobsDeadline = next;
    return next;
  }

  /** The job a message names; in monitor mode an unknown job is watched on first sight. */
  #lookup(jobId: string): TrackedJob | undefined {
    if (this.#closed) return undefined;
    if (this.#monitor && !this.#jobs.has(jobId)) this.addJob(jobId);
    return this.#jobs.get(jobId);
  }

  #afterTerminal(job: TrackedJob, resolution: Resolution, msg: VerifiedEvent): WatchAction[] {
    if (job.seqs.hasAccepted(msg.seq)) {
      return [{ type: 'audit', jobId: job.jobId, entry: { type: 'duplicate', seq: msg.seq, event: msg.event } }];
    }
    // The terminal event of the state (or record) that resolved the job: the same news, not a late event.
    const echo = resolution.via !== 'event' && (resolution.seq === null || resolution.seq === msg.seq) && terminalStatusOf(msg.event) !== null;
    if (echo) return [];
    const entry = { type: 'ignored_after_terminal', seq: msg.seq, event: msg.event, status: resolution.status } as const;
    return [{ type: 'audit', jobId: job.jobId, entry }];
  }

  #resolveExternally(jobId: string, status: TerminalStatus, payload: unknown, via: 'disk' | 'operator'): WatchAction[] {
    const expired = this.#settleClocks();
    if (expired) return expired;
    const job = this.#lookup(jobId);
    if (!job || job.resolution) return [];
    const actions: WatchAction[] = [];
    if (payload !== undefined) actions.push({ type: 'print', jobId, payload, via, seq: null, event: null });
    actions.push(...this.#resolve(job, { status, via, seq: null }));
    return actions;
  }

  #resolve(job: TrackedJob, resolution: Resolution): WatchAction[] {
    job.resolution = resolution;
    this.#deadlineMoved(job.clock.nextDeadline, null);
    const actions: WatchAction[] = [{ type: 'resolved', jobId: job.jobId, status: resolution.status, via: resolution.via }];
    // Contract §4: monitor mode never exits on a terminal; several --jobs end when all are resolved.
    if (this.#monitor) return actions;
    const statuses: TerminalStatus[] = [];
    for (const j of this.#jobs.values()) {
      if (!j.resolution) return actions;
      statuses.push(j.resolution.status);
    }
    actions.push(this.#exit(outcomeOf(statuses)));
    return actions;
  }

  /** The exit owed for deadlines already passed, evaluated with the connection state they passed in. */
  #settleClocks(): WatchAction[] | null {
    if (this.#closed) return [];
    const now = this.#now();
    if (this.#firstConnectDeadline !== null && now >= this.#firstConnectDeadline) {
      return [this.#exit({ type: 'exit', reason: 'broker_unreachable' })];
    }
    // Before the earliest deadline no clock can have run out: the walk below would find nothing.
    const earliest = this.#earliestJobDeadline();
    if (earliest === null || now < earliest) return null;
    let first: { jobId: string; kind: 'wall' | 'idle'; at: number } | null = null;
    for (const job of this.#jobs.values()) {
      if (job.resolution) continue;
      const expiry = job.clock.expiry(now);
      if (expiry && (!first || expiry.at < first.at)) first = { jobId: job.jobId, ...expiry };
    }
    // The first clock to run out ends the watch, even when other jobs already failed (contract §4).
    if (first) return [this.#exit(timeoutExit(first.jobId, first.kind, this.#connected))];
    return null;
  }

  #exit(action: ExitAction): ExitAction {
    this.#closed = true;
    return action;
  }
}

/** Seconds to ms; 0 disables a clock (as `timeout 0` does). Anything else not finite and ≥ 0 is a caller's bug. */
function limitsMs(sec: Required<WatchTimeoutFlags>): JobLimitsMs {
  const ms = (s: number): number => {
    if (!Number.isFinite(s) || s < 0) throw new RangeError(`WatchState: a limit must be a finite number ≥ 0, got ${s}`);
    return s * 1000;
  };
  const enabled = (s: number): number | null => (ms(s) === 0 ? null : ms(s));
  return { wallMs: enabled(sec.timeoutSec), idleMs: enabled(sec.idleTimeoutSec), ackMs: ms(sec.ackTimeoutSec) };
}
