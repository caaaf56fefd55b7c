import { publishCommandLine } from '../bin-path.ts';
import type { MamConfig } from '../config/config.ts';
import { ExitCode } from '../errors.ts';
import type { Logger } from '../log.ts';
import { publishCloseState } from '../publisher/close-state.ts';
import type { JobRecord } from '../registry/job-record.ts';
import { isTerminalStatus } from '../registry/job-record.ts';
import type { Registry, RegisterInput } from '../registry/registry.ts';
import type { CloseRequest } from '../registry/transitions.ts';
import { AgentProcess, describeExit } from '../remote/agent-process.ts';
import { Subscriber } from '../subscriber/subscriber.ts';
import { brokerAnswers, isLoopback } from './broker-probe.ts';

export interface DelegateOptions {
  job: Omit<RegisterInput, 'transport'>;
  /** Exactly one: a local command, or a remote runner's session. */
  exec?: string | undefined;
  remoteSession?: string | undefined;
  embeddedBroker: boolean;
  write: (text: string) => void;
  format: (payload: unknown) => string;
  /** A live status line for people at a terminal (the CLI draws it). */
  onStatus?: (status: DelegationStatus) => void;
  log: Logger;
  stopSignal: Promise<void>;
  onRegistered?: (record: JobRecord) => void;
}

export interface DelegationStatus {
  jobId: string;
  status: string;
  lastEvent: string | null;
  lastEventAt: number | null;
}

/** After the agent's command ends, how long its last events may take to arrive before the job is closed. */
const AFTER_EXIT_GRACE_MS = 3_000;

/**
 * `mam delegate` (contract §1): register, watch, launch, require `started` within the ack timeout,
 * stream, and close what did not finish. Every decision about the outcome is still the
 * subscriber's, from signed events; this only adds the orchestrator's duties around it.
 */
export class Delegation {
  private agent: AgentProcess | undefined;
  private started = false;
  private closing: { request: CloseRequest; reason: string; exit: number } | undefined;
  private stopWatch!: () => void;
  private readonly status: DelegationStatus = { jobId: '', status: 'pending', lastEvent: null, lastEventAt: null };

  constructor(
    private readonly config: MamConfig,
    private readonly registry: Registry,
    private readonly opts: DelegateOptions,
  ) {}

  async run(): Promise<number> {
    const stopBroker = await this.ensureBroker();
    try {
      return await this.delegate();
    } finally {
      await stopBroker();
    }
  }

  private async delegate(): Promise<number> {
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
        onSubscribed: subscribed,
        onPrinted: (_jobId, event, payload) => this.onPrinted(event, payload),
      },
      [record],
    );
    const watching = subscriber.run();
    this.opts.stopSignal.then(() => this.abort('cancelled', 'cancelled', ExitCode.failure));
    // Start watching before the agent starts, so that nothing it publishes is missed.
    const first = await Promise.race([ready.then(() => 'ready' as const), watching]);
    if (first === 'ready' && !this.closing) {
      await this.launch(record);
      this.armAckTimeout(record);
    }
    const watchCode = await watching;
    return this.finish(record, watchCode);
  }

  private async launch(record: JobRecord): Promise<void> {
    if (this.opts.remoteSession) {
      const { dispatchJob } = await import('../remote/dispatcher.ts');
      await dispatchJob(this.config, this.registry, record.job_id, this.opts.remoteSession);
      return;
    }
    this.agent = new AgentProcess(this.opts.exec!, {
      ...process.env,
      MAM_REAL_ROOT: this.config.root,
      MAM_REGISTRY_DIR: this.registry.paths.registryDir,
      MAM_LOG_DIR: this.registry.paths.logDir,
      MQTT_BROKER: this.config.broker.host,
      MQTT_PORT: String(this.config.broker.port),
      JOB_ID: record.job_id,
      MAM_JOB_BRIEF: record.brief,
      MAM_PUBLISH_CMD: publishCommandLine(record.job_id),
      MAM_DISPATCH_TOKEN: record.dispatch_token,
      MAM_ATTEMPT_ID: String(record.attempt_id),
    });
    void this.agent.exited.then((exit) => this.onAgentExit(record, exit));
  }

  /** Fail closed: an agent that has not said `started` within the ack timeout is stopped and never re-launched. */
  private armAckTimeout(record: JobRecord): void {
    const timer = setTimeout(() => {
      if (!this.started) this.abort('error', 'agent_blocked', ExitCode.failure);
    }, record.ack_timeout_sec * 1000);
    timer.unref();
  }

  /** A local agent that ended without a terminal event gets one chance for its last events to land. */
  private onAgentExit(record: JobRecord, exit: { code: number | null; signal: NodeJS.Signals | null }): void {
    if (this.closing) return;
    const timer = setTimeout(() => {
      if (this.closing) return;
      const now = this.registry.read(record.job_id);
      if (isTerminalStatus(now.status)) return;
      this.opts.log.warn({ job: record.job_id }, `${describeExit(exit)} without reporting an outcome`);
      this.abort('error', 'agent_exited', ExitCode.failure);
    }, AFTER_EXIT_GRACE_MS);
    timer.unref();
  }

  private onPrinted(event: string | null, payload: unknown): void {
    if (event === 'started') this.started = true;
    if (event !== null) {
      this.status.lastEvent = event;
      this.status.lastEventAt = Date.now();
    }
    const p = payload as { status?: string };
    this.status.status = p.status ?? (event === 'completed' || event === 'error' ? event : this.started ? 'running' : 'pending');
    this.opts.onStatus?.({ ...this.status });
  }

  /** Ends the watch on the orchestrator's decision (ack timeout, signal, agent gone); finish() closes. */
  private abort(request: CloseRequest, reason: string, exit: number): void {
    if (this.closing) return;
    this.closing = { request, reason, exit };
    this.stopWatch();
  }

  private async finish(record: JobRecord, watchCode: number): Promise<number> {
    let closing = this.closing;
    if (!closing && (watchCode === ExitCode.notDelivered || watchCode === ExitCode.brokerDown)) {
      closing = watchCode === ExitCode.notDelivered
        ? { request: 'deadline_timeout', reason: 'deadline_timeout', exit: ExitCode.notDelivered }
        : { request: 'error', reason: 'broker_unreachable', exit: ExitCode.brokerDown };
    }
    if (this.agent) await this.agent.stop();
    if (!closing) return watchCode;
    const now = this.registry.read(record.job_id);
    // The job ended on its own while we were deciding: its outcome stands.
    if (isTerminalStatus(now.status)) return now.status === 'completed' ? ExitCode.ok : ExitCode.failure;
    const { record: closed } = await this.registry.close(record.job_id, closing.request, closing.reason);
    process.stderr.write(`job ${record.job_id}: closed ${closed.status} (${closing.reason})\n`);
    // Watchers elsewhere (a remote runner, a dashboard) learn it from the signed retained state.
    const failure = await publishCloseState(this.config, closed, closing.request, closing.reason);
    if (failure) this.opts.log.warn({ job: record.job_id, err: failure.message }, 'close not published');
    return closing.exit;
  }

  /** No broker at a loopback address: start the embedded one there for the duration of the command. */
  private async ensureBroker(): Promise<() => Promise<void>> {
    const { host, port } = this.config.broker;
    if (!this.opts.embeddedBroker || !isLoopback(host) || (await brokerAnswers(host, port))) return async () => {};
    const { startEmbeddedBroker } = await import('../broker/embedded-broker.ts');
    const broker = await startEmbeddedBroker({ host, port });
    process.stderr.write(`mam delegate: no broker at ${host}:${port}; started the embedded one there for this job\n`);
    return () => broker.close();
  }
}
