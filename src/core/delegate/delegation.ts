import { type AgentChoice, prepareLaunch } from '../agents/agent-launch.ts';
import type { MamConfig } from '../config/config.ts';
import type { Logger } from '../log.ts';
import { isLoopback } from '../mqtt/broker-target.ts';
import { closeJob } from '../publisher/close-state.ts';
import type { JobRecord } from '../registry/job-record.ts';
import type { RegisterInput, Registry } from '../registry/registry.ts';
import { AgentProcess, type AgentExit, describeExit } from '../remote/agent-process.ts';
import { Subscriber, type SubscribeOptions, type WatchOutcome } from '../subscriber/subscriber.ts';
import { type CloseRequest, type TerminalStatus, isTerminalStatus, terminalStatusOf } from '../vocabulary.ts';
import { brokerAnswers } from './broker-probe.ts';
import { appendLine } from '../registry/record-store.ts';
import { SessionUnavailable } from '../sessions/session-errors.ts';
import { jsonLine } from '../subscriber/output.ts';

/** A running agent, as a process or in a tmux pane: both end and are stopped the same way. */
export interface RunningAgent {
  readonly exited: Promise<AgentExit>;
  stop(): Promise<AgentExit>;
  /** Why the agent is gone, when it knows better than its exit status (a named session's pane killed). */
  readonly exitDetail?: string | undefined;
}

/**
 * `--session N`: hands the job to a named session's agent (src/core/sessions/) instead of starting
 * one. Throws SessionUnavailable, before anything reached the agent, when the session is busy or
 * not running.
 */
export type SessionDeliverer = (record: JobRecord, cancelled: () => boolean) => Promise<RunningAgent>;

/** Starts an agent in a terminal pane (`--pane tmux`; src/core/panes/), instead of a plain process. */
export type PaneStarter = (jobId: string, launch: { command: string; env: NodeJS.ProcessEnv; terminalPrompt?: string | undefined }) => Promise<RunningAgent>;

export interface DelegateOptions {
  job: Omit<RegisterInput, 'transport'>;
  /** Exactly one: a local agent (a preset or a command line), or a remote runner's session. */
  agent?: AgentChoice | undefined;
  remoteSession?: string | undefined;
  /** Run the local agent in a pane rather than as a child process. */
  pane?: PaneStarter | undefined;
  /** Deliver the job into a running named session instead of starting an agent. */
  session?: SessionDeliverer | undefined;
  embeddedBroker: boolean;
  write: (text: string) => void;
  format: (payload: unknown) => string;
  log: Logger;
  stopSignal: Promise<unknown>;
  onRegistered?: (record: JobRecord) => void;
  onSubscribed?: SubscribeOptions['onSubscribed'];
  /** A live status line for people at a terminal (the CLI draws it). */
  onStatus?: (status: DelegationStatus) => void;
  /** No broker answered on loopback, and the embedded one was started there. */
  onEmbeddedBroker?: (where: { host: string; port: number }) => void;
  /** The agent asked for permission (a verified `permission_required`): `seq` is the request to answer. */
  onPermissionRequired?: (request: { jobId: string; seq: number; detail: string }) => void;
}

export interface DelegationStatus {
  jobId: string;
  status: string;
  lastEvent: string | null;
  lastEventAt: number | null;
}

/**
 * How a delegation ended (contract §1). The job's own outcome (`completed`, `failed`), or what the
 * orchestrator decided: an agent that never said `started` (`agent_blocked`), one that ended without
 * an outcome (`agent_exited`), a signal (`cancelled`), a timeout (`deadline_timeout`), or no broker.
 */
export type DelegationEnd =
  | 'completed'
  | 'failed'
  | 'agent_blocked'
  | 'agent_exited'
  | 'cancelled'
  | 'deadline_timeout'
  | 'broker_unreachable'
  /** `--session`: the job never reached the session (busy past `--wait-idle`, or not running); closed `cancelled`. */
  | 'session_busy'
  | 'session_not_running';

export interface DelegationOutcome {
  jobId: string;
  end: DelegationEnd;
  /** The job's status when the delegation ended. */
  status: TerminalStatus | 'pending' | 'running';
  /** When the delegation closed the job itself: the status and the reason it recorded. */
  closed?: { status: TerminalStatus; reason: string; why?: string | undefined } | undefined;
  /** Why watchers elsewhere were not told of that close, when they were not. */
  closeNotice?: Error | undefined;
  watch: WatchOutcome;
}

/** After the agent's command ends, how long its last events may take to arrive before the job is closed. */
const AFTER_EXIT_GRACE_MS = 3_000;

interface Closing {
  request: CloseRequest;
  end: DelegationEnd;
  /** The job's detail when it is not the end's name (`session_terminated: …`). */
  detail?: string | undefined;
  /** A sentence for the person (why a session took no job). */
  why?: string | undefined;
}

/**
 * `mam delegate` (contract §1): register, watch, launch, require `started` within the ack timeout,
 * stream, and close what did not finish. Every decision about the outcome is still the
 * subscriber's, from signed events; this only adds the orchestrator's duties around it.
 */
export class Delegation {
  private agent: RunningAgent | undefined;
  private started = false;
  private closing: Closing | undefined;
  private stopWatch!: () => void;
  private readonly status: DelegationStatus = { jobId: '', status: 'pending', lastEvent: null, lastEventAt: null };

  constructor(
    private readonly config: MamConfig,
    private readonly registry: Registry,
    private readonly opts: DelegateOptions,
  ) {}

  async run(): Promise<DelegationOutcome> {
    const stopBroker = await this.ensureBroker();
    try {
      return await this.delegate();
    } finally {
      await stopBroker();
    }
  }

  private async delegate(): Promise<DelegationOutcome> {
    const record = await this.registry.register({ ...this.opts.job, transport: this.opts.remoteSession ? 'remote' : 'herdr' });
    this.status.jobId = record.job_id;
    this.opts.onRegistered?.(record);
    const watchStopped = new Promise<void>((resolve) => (this.stopWatch = resolve));
    let subscribed!: () => void;
    const ready = new Promise<void>((resolve) => (subscribed = resolve));
    const subscriber = new Subscriber(
      this.config,
      this.registry,
      {
        jobIds: [record.job_id],
        all: false,
        flags: {},
        remote: this.opts.remoteSession !== undefined,
        write: this.opts.write,
        format: this.opts.format,
        log: this.opts.log,
        stopSignal: watchStopped,
        onSubscribed: (info) => {
          this.opts.onSubscribed?.(info);
          subscribed();
        },
        onPrinted: (_jobId, event, payload) => this.onPrinted(event, payload),
      },
      [record],
    );
    const watching = subscriber.run();
    void this.opts.stopSignal.then(() => this.abort('cancelled', 'cancelled'));
    // Start watching before the agent starts, so that nothing it publishes is missed.
    const first = await Promise.race([ready.then(() => 'ready' as const), watching]);
    if (first === 'ready' && !this.closing) {
      await this.launch(record);
      this.armAckTimeout(record);
    }
    return this.finish(record, await watching);
  }

  private async launch(record: JobRecord): Promise<void> {
    if (this.opts.session) {
      try {
        this.agent = await this.opts.session(record, () => this.closing !== undefined);
      } catch (err) {
        if (!(err instanceof SessionUnavailable)) throw err;
        this.abort('cancelled', err.reason, undefined, err.message);
        return;
      }
      void this.agent.exited.then((exit) => this.onAgentExit(record, exit));
      return;
    }
    if (this.opts.remoteSession) {
      const { dispatchJob } = await import('../remote/dispatcher.ts');
      await dispatchJob(this.config, this.registry, record.job_id, this.opts.remoteSession);
      return;
    }
    const launch = prepareLaunch(this.config, this.registry, record, this.opts.agent!, this.opts.pane ? 'pane' : 'headless');
    this.agent = this.opts.pane ? await this.opts.pane(record.job_id, launch) : new AgentProcess(launch.command, launch.env, { stdinFile: launch.stdinFile });
    void this.agent.exited.then((exit) => this.onAgentExit(record, exit));
  }

  /** Fail closed: an agent that has not said `started` within the ack timeout is stopped and never re-launched. */
  private armAckTimeout(record: JobRecord): void {
    const timer = setTimeout(() => {
      if (!this.started) this.abort('error', 'agent_blocked');
    }, record.ack_timeout_sec * 1000);
    timer.unref();
  }

  /** A local agent that ended without a terminal event gets one chance for its last events to land. */
  private onAgentExit(record: JobRecord, exit: AgentExit): void {
    if (this.closing) return;
    const timer = setTimeout(() => {
      if (this.closing) return;
      if (isTerminalStatus(this.registry.read(record.job_id).status)) return;
      this.opts.log.warn({ job: record.job_id }, `${describeExit(exit)} without reporting an outcome`);
      this.abort('error', 'agent_exited', this.agent?.exitDetail);
    }, AFTER_EXIT_GRACE_MS);
    timer.unref();
  }

  private onPrinted(event: string | null, payload: unknown): void {
    this.keepWatcherOutput(payload);
    if (event === 'started') this.started = true;
    if (event === 'permission_required') {
      const p = payload as { seq: number; detail: string };
      this.opts.onPermissionRequired?.({ jobId: this.status.jobId, seq: Number(p.seq), detail: p.detail });
    }
    if (event !== null) {
      this.status.lastEvent = event;
      this.status.lastEventAt = Date.now();
    }
    const p = payload as { status?: string };
    this.status.status = p.status ?? terminalStatusOf(event ?? '') ?? (this.started ? 'running' : 'pending');
    this.opts.onStatus?.({ ...this.status });
  }

  /**
   * The job's watcher output, kept beside the job (`<log dir>/<job>/subscriber.out`, as the seed's
   * `<job>.subscriber.out`): JSON lines, whatever the terminal shows, so `mam show --events` reads
   * a finished job back. Losing it loses no outcome: a failure to write is a warning.
   */
  private keepWatcherOutput(payload: unknown): void {
    if (!this.status.jobId) return;
    try {
      appendLine(this.registry.paths.subscriberOut(this.status.jobId), jsonLine(payload));
    } catch (err) {
      this.opts.log.warn({ job: this.status.jobId, err: (err as Error).message }, 'watcher output not kept');
    }
  }

  /** Ends the watch on the orchestrator's decision (ack timeout, signal, agent gone); finish() closes. */
  private abort(request: CloseRequest, end: DelegationEnd, detail?: string, why?: string): void {
    if (this.closing) return;
    this.closing = { request, end, detail, why };
    this.stopWatch();
  }

  private async finish(record: JobRecord, watch: WatchOutcome): Promise<DelegationOutcome> {
    let closing = this.closing;
    if (!closing && (watch.reason === 'wall_timeout' || watch.reason === 'idle_timeout')) closing = { request: 'deadline_timeout', end: 'deadline_timeout' };
    if (!closing && (watch.reason === 'broker_unreachable' || watch.reason === 'broker_refused')) closing = { request: 'error', end: 'broker_unreachable' };
    if (this.agent) await this.agent.stop();
    const now = this.registry.read(record.job_id);
    const outcome = { jobId: record.job_id, status: now.status, watch };
    if (!closing) return { ...outcome, end: watch.reason === 'all_completed' ? 'completed' : 'failed' };
    // The job ended on its own while we were deciding: its outcome stands.
    if (isTerminalStatus(now.status)) return { ...outcome, end: now.status === 'completed' ? 'completed' : 'failed' };
    const { record: closed, notice } = await closeJob(this.config, this.registry, record.job_id, closing.request, closing.detail ?? closing.end);
    if (notice) this.opts.log.warn({ job: record.job_id, err: notice.message }, 'close not published');
    return {
      ...outcome,
      status: closed.status as TerminalStatus,
      end: closing.end,
      closed: { status: closed.status as TerminalStatus, reason: closing.end, why: closing.why },
      closeNotice: notice,
    };
  }

  /** No broker at a loopback address: start the embedded one there for the duration of the command. */
  private async ensureBroker(): Promise<() => Promise<void>> {
    const { host, port } = this.config.broker;
    if (!this.opts.embeddedBroker || !isLoopback(host) || (await brokerAnswers(host, port))) return async () => {};
    const { startEmbeddedBroker } = await import('../broker/embedded-broker.ts');
    const broker = await startEmbeddedBroker({ host, port });
    this.opts.onEmbeddedBroker?.({ host, port });
    return () => broker.close();
  }
}
