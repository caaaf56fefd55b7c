import type { MamConfig } from '../config/config.ts';
import { MamError, TransitionRefused } from '../errors.ts';
import { BrokerError } from '../mqtt/broker-errors.ts';
import { resolveBrokerTarget } from '../mqtt/broker-target.ts';
import { deliver } from '../publisher/deliver.ts';
import { detailSecrets } from '../publisher/publisher.ts';
import { JsonText } from '../registry/audit-log.ts';
import type { JobRecord } from '../registry/job-record.ts';
import type { Registry } from '../registry/registry.ts';
import { isTerminalStatus } from '../vocabulary.ts';
import { wireJson } from '../wire/canonical-json.ts';
import { scrubDetail } from '../wire/scrub.ts';
import type { Signed } from '../wire/signature.ts';
import { controlTopic } from '../wire/topics.ts';
import { type DecisionKind, MAX_REASON_CHARS, type UnsignedDecisionPayload, signDecision } from './decision.ts';
import { latestUndecidedRequest } from './pending-requests.ts';

/** No `--seq` was given and this host's audit holds no request of the current attempt waiting for an answer. */
export class NoPendingRequest extends MamError {
  constructor(jobId: string) {
    super(`job ${jobId}: no permission request of its current attempt is waiting here; pass --seq N (the delegator's view prints it)`);
  }
}

/**
 * The broker did not acknowledge the decision. A BrokerError, so that the CLI's one error map gives
 * it the publisher's "not acknowledged" code (2); nothing was written to the record either way.
 */
export class DecisionNotDelivered extends BrokerError {
  constructor(jobId: string, requestSeq: number, cause: Error) {
    super(`job ${jobId}: decision for seq ${requestSeq} not acknowledged by the broker (${cause.message})`, { cause });
  }
}

export interface DecisionRequest {
  jobId: string;
  decision: DecisionKind;
  /** Shown to the agent on a deny; default "approved/denied by the operator". Scrubbed like a detail. */
  reason?: string | undefined;
  /** The `permission_required` seq answered; default the newest undecided one in this host's audit. */
  requestSeq?: number | undefined;
  /** Delivery tries in total (contract §3 backoff between them). */
  attempts: number;
  /** Who answers, for the audit (`operator` for the CLI; a dashboard may say `dashboard`). */
  source?: string | undefined;
}

export interface SentDecision {
  requestSeq: number;
  topic: string;
  payload: Signed<UnsignedDecisionPayload>;
}

export function defaultReason(decision: DecisionKind): string {
  return decision === 'allow' ? 'approved by the operator' : 'denied by the operator';
}

/**
 * The reason as it goes on the wire: scrubbed like a detail (contract §3: it reaches a shared broker
 * and the agent's transcript), then cut to `MAX_REASON_CHARS` — after scrubbing, so that no secret
 * is cut where the scrubber could no longer recognise it.
 */
export function wireReason(config: MamConfig, record: JobRecord, decision: DecisionKind, reason: string | undefined): string {
  const scrubbed = scrubDetail(reason ?? defaultReason(decision), { workspaceRoot: config.root, secrets: detailSecrets(config, record) });
  return Array.from(scrubbed).slice(0, MAX_REASON_CHARS).join('');
}

/**
 * `mam approve` / `mam deny`: sign a decision for the record's current attempt and deliver it on a
 * one-shot connection, retried like a publish. Nothing in the record changes (a decision takes no
 * seq); `decision_sent` is audited once the broker acknowledged it, so a failed send leaves the
 * request undecided and a retry without `--seq` finds it again.
 */
export async function sendDecision(config: MamConfig, registry: Registry, req: DecisionRequest): Promise<SentDecision> {
  const record = registry.read(req.jobId);
  const source = req.source ?? 'operator';
  if (isTerminalStatus(record.status)) {
    const reason = `job is already ${record.status}: no request can be waiting`;
    registry.audit.append(record.job_id, {
      type: 'refused',
      source,
      request: `decision:${req.decision}`,
      reason,
      status: record.status,
      attempt_id: record.attempt_id,
    });
    throw new TransitionRefused(record.job_id, reason);
  }
  const requestSeq = req.requestSeq ?? latestUndecidedRequest(registry, record);
  if (requestSeq === undefined) throw new NoPendingRequest(record.job_id);
  const payload = signDecision(record, { requestSeq, decision: req.decision, reason: wireReason(config, record, req.decision, req.reason) });
  const topic = controlTopic(config.topicRoot, record.job_id);
  const text = wireJson(payload);
  try {
    await deliver(resolveBrokerTarget(config.broker, record), [{ topic, payload: text, retain: false }], { attempts: req.attempts });
  } catch (err) {
    registry.audit.append(record.job_id, {
      type: 'publish_failed',
      event: 'decision',
      request_seq: requestSeq,
      attempts: req.attempts,
      reason: (err as Error).message,
    });
    throw new DecisionNotDelivered(record.job_id, requestSeq, err as Error);
  }
  registry.audit.append(record.job_id, {
    type: 'decision_sent',
    source,
    request_seq: requestSeq,
    decision: req.decision,
    reason: payload.reason,
    attempt_id: record.attempt_id,
    payload: new JsonText(text),
  });
  return { requestSeq, topic, payload };
}
