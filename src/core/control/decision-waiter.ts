import type { MamConfig } from '../config/config.ts';
import { MamError } from '../errors.ts';
import { monotonicMs } from '../monotonic.ts';
import type { Logger } from '../log.ts';
import { type BrokerError, BrokerUnreachable } from '../mqtt/broker-errors.ts';
import { describeTarget, resolveBrokerTarget } from '../mqtt/broker-target.ts';
import type { Registry } from '../registry/registry.ts';
import { WatchConnection } from '../subscriber/watch-connection.ts';
import { controlTopic } from '../wire/topics.ts';
import { type DecisionKind, type DecisionPayload, type DecisionVerdict, type PendingRequest, checkDecision, fenceRequest } from './decision.ts';

/** Who settled a request: an operator's verified decision, or MAM failing closed. */
export type DecisionBy = 'operator' | 'timeout' | 'broker_unreachable';

export interface Decision {
  decision: DecisionKind;
  reason: string;
  by: DecisionBy;
}

/**
 * How long `open` waits for the SUBACK. The contract's CONNACK bound is 10 s; a waiter that is not
 * subscribed by then would only see answers published after it is, so it fails closed instead.
 */
export const SUBSCRIBE_TIMEOUT_MS = 10_000;

/** setTimeout's longest delay (2^31 − 1 ms, about 24.8 days); a longer one fires at once in Node. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Waiting {
  pending: PendingRequest;
  resolve(decision: Decision): void;
  reject(err: Error): void;
  timer?: NodeJS.Timeout | undefined;
}

/**
 * Thrown to a caller whose wait ended without a decision: the waiter was closed (the permission
 * server shutting down) or the caller withdrew the request (Claude cancelled the tool call).
 */
export class WaitWithdrawn extends MamError {
  constructor(jobId: string, why: string) {
    super(`job ${jobId}: stopped waiting for a permission decision (${why})`);
  }
}

/**
 * Listens on one job's control topic for the answers to its permission requests. It is opened (the
 * broker has acknowledged the subscription) before a request is published, so no answer can be
 * published before anyone listens; it serves several requests at once (an agent may ask for two
 * tools in parallel), each waited on by its seq. Every decision message it receives is audited in
 * the job's `events.ndjson`: `decision_received` when it settles a request, else `rejected`.
 *
 * The connection is the subscriber's (a process-unique QoS 1 session, reconnects backed off,
 * subscriptions restored, the session cleared on close), so an answer published while the link was
 * cut still arrives after the reconnect.
 */
export class DecisionWaiter {
  private readonly waiting = new Map<number, Waiting>();
  /** Messages no request matched while a request was being published (see `hold`). */
  private held: Array<{ topic: string; payload: Buffer }> = [];
  private holds = 0;
  private up = false;
  private failure: BrokerError | undefined;
  private closed = false;

  private conn: WatchConnection | undefined;

  private constructor(
    private readonly registry: Registry,
    private readonly jobId: string,
    private readonly log: Logger | undefined,
  ) {}

  /** Subscribes the job's control topic; resolves once the broker acknowledged the subscription. */
  static async open(
    config: MamConfig,
    registry: Registry,
    jobId: string,
    options: { log?: Logger | undefined; subscribeTimeoutMs?: number | undefined } = {},
  ): Promise<DecisionWaiter> {
    const target = resolveBrokerTarget(config.broker, registry.read(jobId));
    const topic = controlTopic(config.topicRoot, jobId);
    const waiter = new DecisionWaiter(registry, jobId, options.log);
    const timeoutMs = options.subscribeTimeoutMs ?? SUBSCRIBE_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const ready = new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => reject(new BrokerUnreachable(describeTarget(target), `not subscribed to ${topic} within ${timeoutMs / 1000} s`)), timeoutMs);
      waiter.conn = new WatchConnection(target, [topic], {
        connected: () => {
          waiter.up = true;
        },
        subscribed: () => resolve(),
        message: (t, payload) => waiter.onMessage(t, payload),
        lost: () => {
          waiter.up = false;
        },
        failed: (err) => {
          waiter.onFailure(err);
          reject(err);
        },
        transientError: (err) => waiter.log?.debug({ err: err.message }, 'control connection error'),
      });
      waiter.conn.open();
    });
    try {
      await ready;
    } catch (err) {
      await waiter.close();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return waiter;
  }

  /** True once the connection failed for good (refused credentials, a denied subscription). */
  get broken(): boolean {
    return this.failure !== undefined || this.closed;
  }

  /**
   * Call before publishing a request, release once `wait` is registered: while held, a verified
   * answer that matches no request yet is kept, since it may answer the request whose seq is not
   * known until its publish returns (a quick operator, or a script, can answer within milliseconds).
   */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds--;
      this.replayHeld();
    };
  }

  /**
   * Resolves with the first verified decision for `pending`; after `timeoutMs` (0: never) with a
   * deny by `timeout` — or by `broker_unreachable` when the connection is down at that moment —
   * since a request nobody answered must not run (fail closed).
   */
  wait(pending: PendingRequest, timeoutMs: number, signal?: AbortSignal): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => {
      const entry: Waiting = { pending, resolve, reject };
      this.waiting.set(pending.seq, entry);
      if (this.closed) return this.withdraw(entry, 'the waiter is closed');
      // Checked as well as listened to: a withdrawal may land while the request is still being published.
      if (signal?.aborted) return this.withdraw(entry, 'the request was withdrawn');
      signal?.addEventListener('abort', () => this.withdraw(entry, 'the request was withdrawn'), { once: true });
      if (this.failure) {
        this.settleByDefault(entry, 'broker_unreachable', `broker unreachable (${this.failure.message}): denied, MAM fails closed`);
        return;
      }
      if (timeoutMs > 0) this.armTimer(entry, monotonicMs() + timeoutMs, timeoutMs);
      this.replayHeld();
    });
  }

  /** Stops listening and clears the broker session; requests still waiting are withdrawn (WaitWithdrawn). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const entry of [...this.waiting.values()]) this.withdraw(entry, 'the asking process stopped waiting');
    await this.conn?.close();
  }

  /**
   * Nobody waits for this request any more. It is audited as settled (`decision_defaulted`, `by:
   * withdrawn`), so that `mam approve` without `--seq` does not answer a request no one will read.
   */
  private withdraw(entry: Waiting, why: string): void {
    if (this.waiting.get(entry.pending.seq) !== entry) return;
    this.waiting.delete(entry.pending.seq);
    clearTimeout(entry.timer);
    this.append({
      type: 'decision_defaulted',
      request_seq: entry.pending.seq,
      decision: 'deny',
      by: 'withdrawn',
      reason: why,
      attempt_id: entry.pending.attemptId,
    });
    entry.reject(new WaitWithdrawn(this.jobId, why));
  }

  private armTimer(entry: Waiting, deadline: number, timeoutMs: number): void {
    // A monotonic deadline: a wall-clock step must neither deny early nor keep the agent waiting.
    const left = deadline - monotonicMs();
    entry.timer = setTimeout(
      () => {
        if (monotonicMs() < deadline) return this.armTimer(entry, deadline, timeoutMs);
        const by: DecisionBy = this.up ? 'timeout' : 'broker_unreachable';
        const why = by === 'timeout' ? `no decision within ${timeoutMs / 1000} s` : 'broker unreachable when the wait ran out';
        this.settleByDefault(entry, by, `${why}: denied, MAM fails closed`);
      },
      Math.min(Math.max(left, 0), MAX_TIMER_MS),
    );
  }

  private onFailure(err: BrokerError): void {
    this.failure = err;
    for (const entry of [...this.waiting.values()]) {
      this.settleByDefault(entry, 'broker_unreachable', `broker unreachable (${err.message}): denied, MAM fails closed`);
    }
  }

  private onMessage(topic: string, payload: Buffer): void {
    // An empty payload clears a retained message; nobody answered anything with it.
    if (this.closed || payload.length === 0) return;
    this.examine(topic, payload);
  }

  private replayHeld(): void {
    const held = this.held;
    this.held = [];
    for (const m of held) this.examine(m.topic, m.payload);
  }

  private examine(topic: string, payload: Buffer): void {
    let verdict: DecisionVerdict;
    try {
      // Read at each message: a redispatch while waiting makes every answer of the old attempt stale.
      verdict = checkDecision(payload, this.registry.read(this.jobId));
    } catch (err) {
      this.log?.warn({ err: (err as Error).message, topic }, 'decision not checked: the job record cannot be read');
      return;
    }
    if (!verdict.ok) {
      this.refuse(topic, verdict);
      return;
    }
    const decision = verdict.payload;
    const entry = this.waiting.get(decision.request_seq);
    if (entry) {
      const refusal = fenceRequest(decision, entry.pending);
      if (refusal) this.refuse(topic, refusal);
      else this.accept(topic, entry, decision);
      return;
    }
    if (this.holds > 0) {
      this.held.push({ topic, payload });
      return;
    }
    const waitingOn = [...this.waiting.keys()].join(', ') || 'none';
    this.refuse(topic, {
      ok: false,
      reason: 'not_pending',
      requestSeq: decision.request_seq,
      detail: `answers seq ${decision.request_seq}, waiting on ${waitingOn}`,
    });
  }

  private accept(topic: string, entry: Waiting, decision: DecisionPayload): void {
    this.settle(
      entry,
      { decision: decision.decision, reason: decision.reason, by: 'operator' },
      {
        type: 'decision_received',
        topic,
        request_seq: decision.request_seq,
        decision: decision.decision,
        reason: decision.reason,
        attempt_id: decision.data.attempt_id,
      },
    );
  }

  private refuse(topic: string, verdict: Extract<DecisionVerdict, { ok: false }>): void {
    this.append({ type: 'rejected', reason: verdict.reason, topic, request_seq: verdict.requestSeq, detail: verdict.detail });
  }

  private settleByDefault(entry: Waiting, by: Exclude<DecisionBy, 'operator'>, reason: string): void {
    this.settle(
      entry,
      { decision: 'deny', reason, by },
      {
        type: 'decision_defaulted',
        request_seq: entry.pending.seq,
        decision: 'deny',
        by,
        reason,
        attempt_id: entry.pending.attemptId,
      },
    );
  }

  private settle(entry: Waiting, decision: Decision, audit: { type: 'decision_received' | 'decision_defaulted'; [key: string]: unknown }): void {
    if (this.waiting.get(entry.pending.seq) !== entry) return; // settled already (a timer racing an answer)
    this.waiting.delete(entry.pending.seq);
    clearTimeout(entry.timer);
    this.append(audit);
    entry.resolve(decision);
  }

  private append(entry: { type: 'rejected' | 'decision_received' | 'decision_defaulted'; [key: string]: unknown }): void {
    try {
      this.registry.audit.append(this.jobId, entry);
    } catch (err) {
      // A full disk must not leave the agent waiting: the answer still counts, the log says why it is not audited.
      this.log?.error({ err: (err as Error).message, entry: entry.type }, 'audit line not written');
    }
  }
}
