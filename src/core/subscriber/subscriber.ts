import type { MamConfig } from '../config/config.ts';
import { UsageError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { BrokerError } from '../mqtt/broker-errors.ts';
import { resolveBrokerTarget } from '../mqtt/broker-target.ts';
import type { JobRecord } from '../registry/job-record.ts';
import type { Registry } from '../registry/registry.ts';
import type { AuditEntry } from '../registry/audit-log.ts';
import { type TerminalStatus, isTerminalStatus } from '../vocabulary.ts';
import { allJobsFilter, jobFilter } from '../wire/topics.ts';
import { systemMonotonicClock } from './clock.ts';
import { DeadlineTimer } from './deadline-timer.ts';
import { closedByOperator, diskResolutionPayload, stateFromRecord } from './disk-fallback.ts';
import { type InboundMessage, MessageInbox } from './message-inbox.ts';
import { MessageVerifier, auditRejection } from './message-verifier.ts';
import { RemoteMirror } from './remote-mirror.ts';
import type { ClockKind, ExitReason, WatchAction } from './watch-actions.ts';
import { WatchConnection } from './watch-connection.ts';
import { type WatchTimeoutFlags, WatchState } from './watch-state.ts';

export interface SubscribeOptions {
  jobIds: string[];
  /** `--all`: monitor every job under the topic root. */
  all: boolean;
  flags: WatchTimeoutFlags;
  /** `--remote`: mirror accepted `started` and terminal events into the local record. */
  remote: boolean;
  write: (text: string) => void;
  /** `wireText`: the payload's compact JSON when the wire carried exactly that (`jsonLine` prints it as is). */
  format: (payload: unknown, wireText?: string) => string;
  log: Logger;
  /** Resolves when SIGINT/SIGTERM (or the program running the watch) asks it to end. */
  stopSignal?: Promise<unknown> | undefined;
  /** Once the broker acknowledged the subscriptions (contract §4's `SUBSCRIBED`). */
  onSubscribed?: (info: { broker: string; watching: string }) => void;
  /** Every printed message (`mam delegate` follows the job through it). */
  onPrinted?: (jobId: string, event: string | null, payload: unknown) => void;
  /** Every discarded message but the silently ignored ones, after its audit (the dashboard marks them; never their content). */
  onRejected?: (rejection: { topic: string; reason: string; jobId?: string | undefined; seq?: number | undefined }) => void;
  /** The connection came up (a CONNACK) or went down; a monitor that shows its own health uses it. */
  onConnection?: (up: boolean) => void;
}

/** How and why a watch ended; src/cli/exit-codes.ts turns it into the contract's exit code. */
export interface WatchOutcome {
  /** `broker_refused`: a failure no retry fixes (credentials, TLS, an ACL); see `failure`. */
  reason: ExitReason | 'broker_refused';
  /** `--all`: a monitor, which a terminal never ends. */
  monitor: boolean;
  /** The job whose clock ran out, for a timeout. */
  jobId?: string | undefined;
  expired?: ClockKind | undefined;
  /** Jobs without an outcome when the watch ended. */
  unresolved: string[];
  /** `mqtt://host:port`. */
  broker: string;
  failure?: BrokerError | undefined;
}

/** How often the registry is looked at for operator closes while watching (contract §4: "within seconds"). */
const REGISTRY_POLL_MS = 1_000;
/**
 * `--all`: a local job registered at least this long after the subscriptions were acknowledged has
 * had every event of its first attempt published to a watch already in place, so its first event
 * seen must be seq 1 and a later one is a `seq_gap`. The margin covers the registrar's own lag and a
 * small step of the clock between the two processes.
 */
const REGISTERED_AFTER_SUBSCRIBED_MS = 2_000;

/**
 * `mam-subscribe` (contract §4): `WatchState` decides; this performs its actions. Messages come from
 * the connection through the inbox, are verified in batches, and their lines go out in one write a
 * batch. The registry is read at start, on every connection loss (disk fallback) and every second
 * (operator closes).
 */
export class Subscriber {
  private readonly state: WatchState;
  private readonly verifier: MessageVerifier;
  private readonly connection: WatchConnection;
  private readonly inbox: MessageInbox;
  private readonly deadline: DeadlineTimer;
  private readonly mirror: RemoteMirror | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  /** Lines of the running batch, written at its end; undefined outside a batch. */
  private batchLines: string[] | undefined;
  private finish!: (outcome: WatchOutcome) => void;
  private readonly done: Promise<WatchOutcome>;
  private finished = false;
  /** Wall-clock time of the first SUBACK (`--all` compares it with records' `created_at`). */
  private subscribedAtMs: number | undefined;

  constructor(
    config: MamConfig,
    private readonly registry: Registry,
    private readonly opts: SubscribeOptions,
    records: JobRecord[],
  ) {
    this.state = new WatchState({
      jobs: records.map((r) => ({
        jobId: r.job_id,
        timeoutSec: r.timeout_sec,
        idleTimeoutSec: r.idle_timeout_sec,
        ackTimeoutSec: r.ack_timeout_sec,
        lastSeq: r.last_seq,
      })),
      monitor: opts.all,
      now: systemMonotonicClock,
      flags: opts.flags,
    });
    this.verifier = new MessageVerifier(config.topicRoot, registry, (jobId) => opts.all || this.state.isWatched(jobId));
    // Several jobs may carry their own broker blocks; the first job's wins (documented in README).
    const target = resolveBrokerTarget(config.broker, records[0]);
    this.connection = new WatchConnection(target, subscriptionFilters(config.topicRoot, opts), {
      connected: (first, sessionPresent) => {
        if (!first) this.auditWatched({ type: 'reconnected', session_present: sessionPresent });
        this.opts.onConnection?.(true);
        this.apply(this.state.onConnected());
      },
      subscribed: () => {
        this.subscribedAtMs = Date.now();
        this.opts.onSubscribed?.({ broker: this.connection.broker, watching: opts.all ? 'all' : opts.jobIds.join(',') });
      },
      message: (topic, payload, retain) => this.inbox.push({ topic, payload, retain }),
      admit: (next) => this.inbox.whenRoom(next),
      lost: () => this.onConnectionLost(),
      failed: (err) => this.end({ reason: 'broker_refused', failure: err }),
      transientError: (err) => opts.log.debug({ err: err.message }, 'connection error'),
    });
    this.inbox = new MessageInbox(
      (msg, batch) => this.handle(msg, batch),
      () => this.flushBatch(),
      config.inboxMax,
    );
    this.deadline = new DeadlineTimer(systemMonotonicClock, () => this.apply(this.state.onTick()));
    this.mirror = opts.remote ? new RemoteMirror(registry, opts.log) : undefined;
    this.done = new Promise((resolve) => (this.finish = resolve));
  }

  async run(): Promise<WatchOutcome> {
    // Disk fallback at start: a job already terminal in the registry needs no broker.
    this.resolveTerminalFromDisk();
    if (!this.finished) this.connection.open();
    this.pollTimer = setInterval(() => this.pollRegistry(), REGISTRY_POLL_MS);
    void this.opts.stopSignal?.then(() => this.apply(this.state.stop()));
    this.deadline.arm(this.state.nextDeadline);
    const outcome = await this.done;
    this.deadline.cancel();
    clearInterval(this.pollTimer);
    this.inbox.close();
    await this.mirror?.settled();
    await this.connection.close();
    return outcome;
  }

  private onConnectionLost(): void {
    if (this.finished) return;
    this.opts.onConnection?.(false);
    this.resolveTerminalFromDisk();
    this.apply(this.state.onBrokerUnreachable());
  }

  private handle(msg: InboundMessage, batch: number): void {
    if (this.finished) return;
    this.batchLines ??= [];
    const verdict = this.verifier.verify(msg.topic, msg.payload, msg.retain, batch);
    if (!verdict.ok) {
      auditRejection(this.registry, this.opts.log, msg.topic, verdict);
      if (verdict.reason !== 'ignored') this.opts.onRejected?.({ topic: msg.topic, reason: verdict.reason, jobId: verdict.jobId, seq: verdict.seq });
      return;
    }
    const m = verdict.message;
    if (this.opts.all && !this.state.isWatched(m.jobId)) this.state.addJob(m.jobId, this.seqBaselineOf(verdict.record));
    this.apply(m.kind === 'event' ? this.state.onEvent(m) : this.state.onState(m));
  }

  /**
   * `--all`: the seq a job newly seen must follow. A watch started mid-job cannot know what it
   * missed, so the first event seen sets the baseline (undefined), except for a first attempt
   * registered after the watch was in place, whose events all came to it: 0, so that a lost seq 1
   * is audited as a gap like any other. Only for `herdr` jobs: a `remote` record may be a runner's
   * copy, made when the dispatch arrived with the job's `last_seq` already past 0.
   */
  private seqBaselineOf(record: JobRecord): number | undefined {
    if (this.subscribedAtMs === undefined || record.attempt_id !== 1 || record.transport !== 'herdr') return undefined;
    return Date.parse(record.created_at) >= this.subscribedAtMs + REGISTERED_AFTER_SUBSCRIBED_MS ? 0 : undefined;
  }

  private print(text: string): void {
    if (this.batchLines) this.batchLines.push(text);
    else this.opts.write(text);
  }

  /** A write per line was a sixth of a monitor's time: a batch's lines go out in one. */
  private flushBatch(): void {
    const lines = this.batchLines;
    this.batchLines = undefined;
    if (lines && lines.length > 0) this.opts.write(lines.join(''));
  }

  private apply(actions: WatchAction[]): void {
    for (const action of actions) {
      if (this.finished) return;
      switch (action.type) {
        case 'print':
          this.print(this.opts.format(action.payload, action.wireText));
          this.opts.onPrinted?.(action.jobId, action.event, action.payload);
          if (action.via === 'event' && action.event !== null) this.mirror?.mirror(action.jobId, action.event, action.seq ?? 0, action.payload);
          break;
        case 'audit':
          if (this.registry.exists(action.jobId)) this.registry.audit.append(action.jobId, action.entry);
          break;
        case 'resolved':
          break;
        case 'exit':
          this.end({ reason: action.reason, jobId: action.jobId, expired: action.expired });
          return;
      }
    }
    this.deadline.arm(this.state.nextDeadline);
  }

  /** Disk fallback (at start, and on every connection loss): jobs already terminal in the registry. */
  private resolveTerminalFromDisk(): void {
    for (const record of this.unresolvedTerminalRecords()) {
      this.apply(this.state.resolveFromDisk(record.job_id, record.status as TerminalStatus, diskResolutionPayload(this.registry, record)));
    }
  }

  /** An operator's `mam-close` ends the watch within seconds, even if its notice never reached the broker. */
  private pollRegistry(): void {
    for (const record of this.unresolvedTerminalRecords()) {
      if (closedByOperator(record)) this.apply(this.state.onOperatorClose(record.job_id, record.status as TerminalStatus, stateFromRecord(record)));
    }
  }

  private unresolvedTerminalRecords(): JobRecord[] {
    const records: JobRecord[] = [];
    for (const jobId of this.state.unresolvedJobIds) {
      try {
        const record = this.verifier.record(jobId);
        if (isTerminalStatus(record.status)) records.push(record);
      } catch {
        // Gone or corrupt: the broker may still resolve it; the verifier audits what arrives.
      }
    }
    return records;
  }

  private auditWatched(entry: AuditEntry): void {
    for (const jobId of this.opts.all ? [] : this.opts.jobIds) if (this.registry.exists(jobId)) this.registry.audit.append(jobId, entry);
  }

  private end(outcome: Pick<WatchOutcome, 'reason' | 'jobId' | 'expired' | 'failure'>): void {
    if (this.finished) return;
    this.finished = true;
    this.flushBatch(); // the lines of the batch that ended the watch go out before anything else
    this.finish({ ...outcome, monitor: this.opts.all, unresolved: this.state.unresolvedJobIds, broker: this.connection.broker });
  }
}

function subscriptionFilters(root: string, opts: Pick<SubscribeOptions, 'all' | 'jobIds'>): string[] {
  return opts.all ? [allJobsFilter(root)] : opts.jobIds.map((id) => jobFilter(root, id));
}

export async function watch(config: MamConfig, registry: Registry, opts: SubscribeOptions): Promise<WatchOutcome> {
  const records = opts.all ? [] : opts.jobIds.map((id) => registry.read(id));
  if (!opts.all && records.length === 0) throw new UsageError('no job to watch');
  return new Subscriber(config, registry, opts, records).run();
}
