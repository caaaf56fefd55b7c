import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import type { MamConfig } from '../config/config.ts';
import { ExitCode, MamError, TransitionRefused } from '../errors.ts';
import type { Logger } from '../log.ts';
import { type BrokerTarget, describeTarget, newClientId, resolveBrokerTarget, toMqttJsOptions } from '../mqtt/broker-target.ts';
import { BrokerTlsRefused, OneShotSession, isTlsFailure } from '../mqtt/one-shot-publish.ts';
import { type JobRecord, isTerminalStatus } from '../registry/job-record.ts';
import type { Registry } from '../registry/registry.ts';
import { systemMonotonicClock } from './clock.ts';
import { closedByOperator, diskResolutionPayload, stateFromRecord } from './disk-fallback.ts';
import { MessageVerifier } from './message-verifier.ts';
import type { TerminalStatus } from './verified-message.ts';
import type { WatchAction } from './watch-actions.ts';
import { type WatchTimeoutFlags, WatchState } from './watch-state.ts';

export interface SubscribeOptions {
  jobIds: string[];
  /** `--all`: monitor every job under the topic root. */
  all: boolean;
  flags: WatchTimeoutFlags;
  /** `--remote`: mirror accepted `started` and terminal events into the local record. */
  remote: boolean;
  write: (text: string) => void;
  format: (payload: unknown) => string;
  log: Logger;
  /** Resolves when SIGINT/SIGTERM asks the watch to end. */
  stopSignal?: Promise<void> | undefined;
  /** Called once the broker acknowledged the subscriptions (after the `SUBSCRIBED` line). */
  onSubscribed?: () => void;
  /** Called for every printed message (`mam delegate` follows the job through it). */
  onPrinted?: (jobId: string, event: string | null, payload: unknown) => void;
}

/** How often the registry is looked at for operator closes while watching (contract §4: "within seconds"). */
const REGISTRY_POLL_MS = 1_000;
/** Messages verified per turn of the event loop, so timers and the socket are served during a flood. */
const DRAIN_BATCH = 256;
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 8_000;

interface Inbound {
  topic: string;
  payload: Buffer;
  retain: boolean;
}

/**
 * `mam-subscribe` (contract §4): the MQTT adapter around `WatchState`. Messages are queued on the
 * network callback and verified later, in batches; the state machine decides, this class performs
 * its actions (print, audit, mirror, exit). Resolves with the exit code.
 */
export class Subscriber {
  private readonly state: WatchState;
  private readonly verifier: MessageVerifier;
  private readonly target: BrokerTarget;
  private readonly clientId: string;
  private client: MqttClient | undefined;
  private readonly inbox: Inbound[] = [];
  private draining = false;
  /** Which drain batch is running (see `drain`). */
  private batch = 0;
  /** Lines printed during the running batch, written at its end; undefined outside a batch. */
  private pendingOutput: string[] | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private subscribedOnce = false;
  private everConnected = false;
  private finish!: (code: number) => void;
  private readonly done: Promise<number>;
  private finished = false;
  /** Mirror writes still in flight; awaited before the process ends, or the outcome is lost. */
  private readonly mirrors = new Set<Promise<unknown>>();

  constructor(
    private readonly config: MamConfig,
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
    this.target = resolveBrokerTarget(config.broker, records[0]);
    this.clientId = newClientId(this.target, 'sub');
    this.done = new Promise((resolve) => (this.finish = resolve));
  }

  async run(): Promise<number> {
    // Disk fallback at start: a job already terminal in the registry needs no broker.
    this.resolveTerminalFromDisk();
    if (!this.finished) this.connect();
    this.pollTimer = setInterval(() => this.pollRegistry(), REGISTRY_POLL_MS);
    this.opts.stopSignal?.then(() => this.apply(this.state.stop()));
    this.armDeadline();
    const code = await this.done;
    await this.shutdown();
    return code;
  }

  /**
   * One filter per job (`<root>/<id>/+`, or `<root>/+/+` for `--all`) rather than one each for
   * `events` and `state`: NATS runs each QoS 1 subscription as its own delivery stream, and with two
   * of them a job's state overtook its own event in most back-to-back pairs, so the watch resolved
   * on the state line and never printed the terminal event. `dispatch` messages also match the
   * filter and are dropped unread.
   */
  private topics(): string[] {
    const root = this.config.topicRoot;
    if (this.opts.all) return [`${root}/+/+`];
    return this.opts.jobIds.map((id) => `${root}/${id}/+`);
  }

  private connect(): void {
    const options: IClientOptions = {
      ...toMqttJsOptions(this.target, this.clientId),
      // The session is this process's own (unique client id): QoS 1 events published while the
      // connection was cut are delivered after the reconnect. It is cleared on exit (shutdown).
      clean: false,
      reconnectPeriod: RECONNECT_MIN_MS,
      resubscribe: false,
    };
    const client = connect(options);
    this.client = client;
    client.on('connect', (connack) => {
      options.reconnectPeriod = RECONNECT_MIN_MS;
      client.options.reconnectPeriod = RECONNECT_MIN_MS;
      if (this.everConnected) this.auditAll({ type: 'reconnected', session_present: connack.sessionPresent });
      this.everConnected = true;
      this.apply(this.state.onConnected());
      this.subscribe(client);
    });
    client.on('message', (topic, payload, packet) => {
      this.inbox.push({ topic, payload, retain: packet.retain });
      this.scheduleDrain();
    });
    client.on('offline', () => this.onConnectionLost());
    client.on('close', () => this.onConnectionLost());
    client.on('reconnect', () => {
      // Back off: 0.5 s, 1 s, 2 s … 8 s between tries while the broker stays away.
      client.options.reconnectPeriod = Math.min((client.options.reconnectPeriod ?? RECONNECT_MIN_MS) * 2, RECONNECT_MAX_MS);
    });
    client.on('error', (err: Error & { code?: number | string }) => {
      if (this.finished) return; // MQTT.js may report one failure more than once
      // A refused CONNACK (bad credentials, not authorized) is final: one line, exit 3.
      if (typeof err.code === 'number' && err.code >= 1 && err.code <= 5) {
        const who = this.target.username ? `user ${this.target.username}` : 'anonymous';
        process.stderr.write(`ERROR: broker ${describeTarget(this.target)} refused ${who}: ${err.message.replace(/^Connection refused: /, '')}\n`);
        this.end(ExitCode.brokerDown);
        return;
      }
      if (this.target.tls && isTlsFailure(err)) {
        process.stderr.write(`ERROR: ${new BrokerTlsRefused(this.target, String(err.code ?? err.message)).message}\n`);
        this.end(ExitCode.brokerDown);
        return;
      }
      this.opts.log.debug({ err: err.message }, 'connection error');
    });
  }

  private subscribe(client: MqttClient): void {
    const topics = this.topics();
    client.subscribe(topics, { qos: 1 }, (err, granted) => {
      if (err) {
        this.opts.log.warn({ err: err.message }, 'subscribe failed');
        return;
      }
      const refused = (granted ?? []).filter((g) => g.qos === 128);
      if (refused.length > 0) {
        process.stderr.write(`ERROR: broker ${describeTarget(this.target)} refused the subscription to ${refused.map((g) => g.topic).join(', ')}\n`);
        this.end(ExitCode.brokerDown);
        return;
      }
      if (!this.subscribedOnce) {
        this.subscribedOnce = true;
        // Contract §4: always printed, whatever the log level; wrappers wait for it.
        process.stderr.write(`SUBSCRIBED ${this.opts.all ? 'all' : this.opts.jobIds.join(',')} ${describeTarget(this.target)}\n`);
        this.opts.onSubscribed?.();
      }
    });
  }

  private onConnectionLost(): void {
    if (this.finished) return;
    this.resolveTerminalFromDisk();
    this.apply(this.state.onBrokerUnreachable());
  }

  private scheduleDrain(): void {
    if (this.draining) return;
    this.draining = true;
    setImmediate(() => this.drain());
  }

  /**
   * Verification runs here, never on the network callback. Every message of a batch arrived before
   * it began (the verifier checks each record once per batch), and its lines go out in one write:
   * a write per line was a sixth of a monitor's time.
   */
  private drain(): void {
    this.draining = false;
    this.batch++;
    this.pendingOutput = [];
    try {
      // One splice per batch: a shift() per message moved the whole backlog each time.
      for (const msg of this.inbox.splice(0, DRAIN_BATCH)) {
        if (this.finished) break;
        this.handle(msg);
      }
    } finally {
      this.flushOutput();
    }
    if (this.inbox.length > 0 && !this.finished) this.scheduleDrain();
  }

  private print(text: string): void {
    if (this.pendingOutput) this.pendingOutput.push(text);
    else this.opts.write(text);
  }

  private flushOutput(): void {
    const lines = this.pendingOutput;
    this.pendingOutput = undefined;
    if (lines && lines.length > 0) this.opts.write(lines.join(''));
  }

  private handle(msg: Inbound): void {
    const verdict = this.verifier.verify(msg.topic, msg.payload, msg.retain, this.batch);
    if (!verdict.ok) {
      if (verdict.reason === 'ignored') return;
      const entry = { type: 'rejected' as const, reason: verdict.reason, topic: msg.topic, seq: verdict.seq, detail: verdict.detail };
      if (verdict.jobId && verdict.reason !== 'unknown_job' && this.registry.exists(verdict.jobId)) this.registry.audit.append(verdict.jobId, entry);
      else this.opts.log.warn(entry, 'message rejected');
      return;
    }
    const m = verdict.message;
    if (this.opts.all) this.state.addJob(m.jobId);
    this.apply(m.kind === 'event' ? this.state.onEvent(m) : this.state.onState(m));
  }

  private apply(actions: WatchAction[]): void {
    for (const action of actions) {
      if (this.finished) return;
      switch (action.type) {
        case 'print':
          this.print(this.opts.format(action.payload));
          this.opts.onPrinted?.(action.jobId, action.event, action.payload);
          if (this.opts.remote && action.via === 'event') this.mirror(action.jobId, action.event, action.seq, action.payload);
          break;
        case 'audit':
          if (this.registry.exists(action.jobId)) this.registry.audit.append(action.jobId, action.entry);
          break;
        case 'resolved':
          break;
        case 'exit':
          this.opts.log.debug({ reason: action.reason, job: action.jobId }, 'watch ends');
          if (action.reason === 'wall_timeout' || action.reason === 'idle_timeout') {
            process.stderr.write(`job ${action.jobId}: ${action.reason === 'wall_timeout' ? 'wall-clock' : 'idle'} timeout\n`);
          } else if (action.reason === 'broker_unreachable') {
            process.stderr.write(`ERROR: broker ${describeTarget(this.target)} unreachable; unresolved: ${this.state.unresolvedJobIds.join(', ')}\n`);
          }
          this.end(action.code);
          return;
      }
    }
    this.armDeadline();
  }

  /** `--remote`: the agent's host has its own registry; ours learns `started` and the outcome from the wire. */
  private mirror(jobId: string, event: string | null, seq: number | null, payload: unknown): void {
    if (event !== 'started' && event !== 'completed' && event !== 'error') return;
    const data = (payload as { data?: { dispatch_token?: string; attempt_id?: unknown } }).data;
    const attemptId = typeof data?.attempt_id === 'object' || typeof data?.attempt_id === 'number' ? Number(String(data.attempt_id)) : undefined;
    const write = this.registry
      .update(jobId, { kind: 'mirror', event, seq: seq ?? 0, dispatchToken: data?.dispatch_token, attemptId }, 'remote')
      .catch((err) => {
        if (!(err instanceof TransitionRefused)) this.opts.log.warn({ err: (err as Error).message, job: jobId }, 'mirror failed');
      })
      .finally(() => this.mirrors.delete(write));
    this.mirrors.add(write);
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

  private armDeadline(): void {
    clearTimeout(this.deadlineTimer);
    if (this.finished) return;
    const at = this.state.nextDeadline;
    if (at === null) return;
    const delay = Math.max(0, at - systemMonotonicClock()) + 1;
    this.deadlineTimer = setTimeout(() => this.apply(this.state.onTick()), delay);
  }

  private auditAll(entry: { type: 'reconnected'; session_present: boolean }): void {
    for (const jobId of this.opts.all ? [] : this.opts.jobIds) if (this.registry.exists(jobId)) this.registry.audit.append(jobId, entry);
  }

  private end(code: number): void {
    if (this.finished) return;
    this.finished = true;
    this.flushOutput(); // the lines of the batch that ended the watch go out before anything else
    this.finish(code);
  }

  /**
   * Leaves no session behind: MQTT 3.1.1 has no session expiry, so a broker would keep this
   * process's queue forever. A clean-session CONNECT with the same client id discards it.
   */
  private async shutdown(): Promise<void> {
    clearTimeout(this.deadlineTimer);
    clearInterval(this.pollTimer);
    await Promise.allSettled([...this.mirrors]);
    const client = this.client;
    if (!client) return;
    await new Promise<void>((resolve) => client.end(true, {}, () => resolve()));
    if (!this.everConnected) return;
    const cleaner = new OneShotSession(this.target, this.clientId);
    try {
      await Promise.race([cleaner.connect().then(() => cleaner.end()), new Promise((r) => setTimeout(r, 2_000))]);
    } catch {
      // Broker gone: nothing to clean, and nothing to wait for.
    } finally {
      cleaner.destroy();
    }
  }
}

export async function watch(config: MamConfig, registry: Registry, opts: SubscribeOptions): Promise<number> {
  const records = opts.all ? [] : opts.jobIds.map((id) => registry.read(id));
  if (!opts.all && records.length === 0) throw new MamError('no job to watch', ExitCode.usage);
  return new Subscriber(config, registry, opts, records).run();
}
