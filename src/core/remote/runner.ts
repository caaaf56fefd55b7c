import { spawn } from 'node:child_process';
import type { MqttClient } from 'mqtt';
import { type AgentChoice, prepareLaunch } from '../agents/agent-launch.ts';
import { binPath } from '../bin-path.ts';
import type { MamConfig } from '../config/config.ts';
import type { Logger } from '../log.ts';
import { newClientId, resolveBrokerTarget } from '../mqtt/broker-target.ts';
import { connectMqtt } from '../mqtt/mqtt-client.ts';
import { deliver } from '../publisher/deliver.ts';
import { defaultDetail, isTerminalStatus } from '../vocabulary.ts';
import type { Registry } from '../registry/registry.ts';
import { MessageVerifier, auditRejection } from '../subscriber/message-verifier.ts';
import { allDispatchTopic, dispatchTopic, parseTopic, stateTopic } from '../wire/topics.ts';
import { AgentProcess, describeExit } from './agent-process.ts';
import { type DispatchPayload, recordFromDispatch, requireDispatchSecret, verifyDispatch } from './dispatch-payload.ts';

export interface RunnerOptions {
  session: string;
  /** The agent to run for each job: a preset or a command line. */
  agent: AgentChoice;
  once: boolean;
  log: Logger;
  stopSignal: Promise<unknown>;
  /** Subscribed to the dispatches (the line scripts wait for). */
  onSubscribed?: () => void;
  /** The delegator cancelled the running job; the agent is being stopped. */
  onCancelled?: (jobId: string) => void;
}

/** `--once`: whether the one job completed; otherwise the runner ran until it was stopped. */
export type RunnerOutcome = 'completed' | 'failed' | 'stopped';

interface Taken {
  dispatch: DispatchPayload;
  authToken: string;
}

/**
 * `mam-remote run` (contract §6): takes verified dispatches for its session from the broker, one job
 * at a time, and runs the agent with the same environment a local delegation gives it. The outcome
 * goes back as ordinary signed events, published through `mam-publish` exactly as an agent would.
 */
export class RemoteRunner {
  private readonly secret: string;
  private readonly client: MqttClient;
  private readonly queue: Taken[] = [];
  private wake: (() => void) | undefined;
  private stopping = false;
  private agent: AgentProcess | undefined;
  private cancelled = new Set<string>();
  private readonly verifier: MessageVerifier;
  private watchedJob: string | undefined;

  constructor(
    private readonly config: MamConfig,
    private readonly registry: Registry,
    private readonly opts: RunnerOptions,
  ) {
    this.secret = requireDispatchSecret(config.dispatchSecret);
    this.verifier = new MessageVerifier(config.topicRoot, registry, (jobId) => jobId === this.watchedJob);
    const target = resolveBrokerTarget(config.broker);
    // With a broker list, each reconnect goes to the next server; 'connect' below subscribes again.
    this.client = connectMqtt(target, newClientId(target, 'runner'), { clean: true, reconnectPeriod: 1_000 });
    this.client.on('connect', () => {
      this.client.subscribe(allDispatchTopic(config.topicRoot), { qos: 1 }, (err) => {
        if (!err) opts.onSubscribed?.();
      });
      if (this.watchedJob) this.client.subscribe(stateTopic(config.topicRoot, this.watchedJob), { qos: 1 });
    });
    this.client.on('message', (topic, payload) => this.onMessage(topic, payload));
    this.client.on('error', (err) => opts.log.warn({ err: err.message }, 'broker connection error'));
  }

  async run(): Promise<RunnerOutcome> {
    this.opts.stopSignal.then(() => {
      this.stopping = true;
      this.wake?.();
      void this.agent?.stop();
    });
    let outcome: RunnerOutcome = 'stopped';
    try {
      while (!this.stopping) {
        const next = this.queue.shift();
        if (!next) {
          await new Promise<void>((resolve) => (this.wake = resolve));
          continue;
        }
        const status = await this.runJob(next);
        if (status === undefined) continue;
        if (this.opts.once) {
          outcome = status === 'completed' ? 'completed' : 'failed';
          break;
        }
      }
    } finally {
      await new Promise<void>((resolve) => this.client.end(false, {}, () => resolve()));
    }
    return outcome;
  }

  private onMessage(topic: string, payload: Buffer): void {
    const where = parseTopic(this.config.topicRoot, topic);
    if (!where || payload.length === 0) return;
    if (where.kind === 'state') {
      this.onState(topic, payload);
      return;
    }
    if (where.kind !== 'dispatch') return;
    const verdict = verifyDispatch(payload, where.jobId, this.secret);
    if (!verdict.ok) {
      this.opts.log.warn({ job: where.jobId, reason: verdict.reason }, 'dispatch rejected');
      return;
    }
    if (verdict.dispatch.session !== this.opts.session) return;
    const key = `${verdict.dispatch.job_id}/${verdict.dispatch.attempt_id}`;
    if (this.queue.some((t) => `${t.dispatch.job_id}/${t.dispatch.attempt_id}` === key)) {
      this.rejectReplay(verdict.dispatch);
      return;
    }
    this.queue.push({ dispatch: verdict.dispatch, authToken: verdict.authToken });
    this.wake?.();
  }

  /** A verified `cancelled` state for the running attempt stops the agent (contract §6). */
  private onState(topic: string, payload: Buffer): void {
    const verdict = this.verifier.verify(topic, payload, false);
    // A forged or stale cancel is evidence of an attack on a running job: audited like the subscriber's discards.
    if (!verdict.ok) {
      auditRejection(this.registry, this.opts.log, topic, verdict);
      return;
    }
    if (verdict.message.kind !== 'state' || verdict.message.status !== 'cancelled') return;
    const jobId = verdict.message.jobId;
    if (this.cancelled.has(jobId)) return;
    this.cancelled.add(jobId);
    this.opts.onCancelled?.(jobId);
    void this.agent?.stop();
  }

  /** Returns the job's final local status, or undefined when the dispatch was not taken. */
  private async runJob({ dispatch, authToken }: Taken): Promise<string | undefined> {
    const jobId = dispatch.job_id;
    const record = recordFromDispatch(dispatch, authToken);
    const topic = dispatchTopic(this.config.topicRoot, jobId);
    const target = resolveBrokerTarget(this.config.broker);
    if (!(await this.registry.adopt(record))) {
      this.rejectReplay(dispatch);
      return undefined;
    }
    // Retire the retained dispatch so that no runner (this one after a restart included) takes it again.
    await deliver(target, [{ topic, payload: '', retain: true }], { attempts: 3 }).catch((err: Error) =>
      this.opts.log.warn({ job: jobId, err: err.message }, 'could not retire the dispatch'),
    );
    this.watchedJob = jobId;
    this.cancelled.delete(jobId);
    this.client.subscribe(stateTopic(this.config.topicRoot, jobId), { qos: 1 });
    const env = this.agentEnv(dispatch);
    try {
      // The heartbeat watches this runner: if it dies, the beats stop and the delegator sees idle.
      await this.publish(env, [
        '--job',
        jobId,
        '--event',
        'started',
        '--heartbeat',
        String(dispatch.contract.heartbeat_sec),
        '--watch-pid',
        String(process.pid),
      ]);
      // A cancel heard while `started` was being published (the retained one of a job cancelled
      // before we took it comes right after the subscription) found no agent to stop: never start it.
      if (this.cancelled.has(jobId)) {
        await this.registry.close(jobId, 'cancelled').catch(() => undefined);
        return 'cancelled';
      }
      const launch = prepareLaunch(this.config, this.registry, this.registry.read(jobId), this.opts.agent, 'headless');
      this.agent = new AgentProcess(launch.command, launch.env, { stdinFile: launch.stdinFile });
      const exit = await this.agent.exited;
      this.agent = undefined;
      if (this.cancelled.has(jobId)) {
        // Mirrored here; nothing more is published for this attempt.
        await this.registry.close(jobId, 'cancelled').catch(() => undefined);
        return 'cancelled';
      }
      const now = this.registry.read(jobId);
      if (!isTerminalStatus(now.status)) {
        const ok = exit.code === 0 && exit.signal === null;
        const detail = ok ? defaultDetail(jobId, 'completed') : this.stopping ? `runner stopped: ${describeExit(exit)}` : describeExit(exit);
        await this.publish(env, ['--job', jobId, '--event', ok ? 'completed' : 'error', '--detail', detail, '--attempt-id', String(dispatch.attempt_id)]);
      }
      return this.registry.read(jobId).status;
    } finally {
      this.client.unsubscribe(stateTopic(this.config.topicRoot, jobId));
      this.watchedJob = undefined;
    }
  }

  /**
   * A verified dispatch of an attempt this runner already holds (queued, or taken before): a replay,
   * whether an attacker's copy or a retained leftover. Never run; logged and audited like any discard.
   */
  private rejectReplay(dispatch: DispatchPayload): void {
    const entry = { job: dispatch.job_id, attempt: dispatch.attempt_id, reason: 'replay' };
    this.opts.log.warn(entry, 'dispatch rejected');
    if (this.registry.exists(dispatch.job_id)) {
      this.registry.audit.append(dispatch.job_id, {
        type: 'rejected',
        reason: 'replay',
        topic: dispatchTopic(this.config.topicRoot, dispatch.job_id),
        attempt_id: dispatch.attempt_id,
      });
    }
  }

  /** The agent publishes into this host's registry, whatever folder the runner was started in. */
  private agentEnv(dispatch: DispatchPayload): NodeJS.ProcessEnv {
    return {
      ...(this.config.env ?? process.env),
      MAM_REAL_ROOT: this.config.root,
      MAM_REGISTRY_DIR: this.registry.paths.registryDir,
      MAM_LOG_DIR: this.registry.paths.logDir,
      MAM_HEARTBEAT_SEC: String(dispatch.contract.heartbeat_sec),
    };
  }

  private publish(env: NodeJS.ProcessEnv, args: string[]): Promise<number | null> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [binPath('mam-publish'), ...args], { env, stdio: ['ignore', process.stderr, process.stderr] });
      child.on('error', () => resolve(null));
      child.on('exit', (code) => resolve(code));
    });
  }
}
