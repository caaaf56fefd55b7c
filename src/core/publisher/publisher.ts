import { type MamConfig, configSecrets } from '../config/config.ts';
import { NotDelivered } from './not-delivered.ts';
import { fenceHeartbeat } from '../heartbeat/terminal-fence.ts';
import type { OutgoingMessage } from '../mqtt/one-shot-publish.ts';
import { resolveBrokerTarget } from '../mqtt/broker-target.ts';
import type { JobRecord } from '../registry/job-record.ts';
import { JsonText } from '../registry/audit-log.ts';
import type { CommitHooks, Registry } from '../registry/registry.ts';
import { wireJson } from '../wire/canonical-json.ts';
import { type UnsignedEventPayload, type UnsignedStatePayload, buildEventPayload, buildStatePayload } from '../wire/payloads.ts';
import { type LifecycleEvent, defaultDetail, isTerminalEvent } from '../vocabulary.ts';
import { scrubDetail } from '../wire/scrub.ts';
import { type Signed, signPayload } from '../wire/signature.ts';
import { eventsTopic, stateTopic } from '../wire/topics.ts';
import { deliver, openSession } from './deliver.ts';

export interface PublishRequest {
  jobId: string;
  event: LifecycleEvent;
  detail?: string | undefined;
  /** The caller's `--data`, already parsed by `parseUserData`. */
  data?: Record<string, unknown> | undefined;
  /** Tries in total (contract default 3). */
  attempts: number;
  expectDispatchToken?: string | undefined;
  expectAttemptId?: number | undefined;
  /** Who asks: `agent` (mam-publish) or `heartbeat` (the timer). */
  source?: string | undefined;
  /** Extra refusal check under the registry lock (the heartbeat barrier of contract §5). */
  check?: CommitHooks['check'];
}

export interface PublishResult {
  record: JobRecord;
  seq: number;
  event: Signed<UnsignedEventPayload>;
  state: Signed<UnsignedStatePayload>;
}

/** The secrets that must never appear in a detail (contract §3). */
export function detailSecrets(config: MamConfig, record: Pick<JobRecord, 'auth_token'>): string[] {
  return [...configSecrets(config), record.auth_token].filter((s): s is string => !!s);
}

/** Signed event + signed retained state for one committed seq. */
export function signedPair(record: JobRecord, seq: number, event: string, detail: string, data: Record<string, unknown> | undefined) {
  const common = { jobId: record.job_id, seq, detail, data, dispatchToken: record.dispatch_token, attemptId: record.attempt_id, now: new Date() };
  const eventPayload = signPayload(buildEventPayload({ ...common, event: event as LifecycleEvent }), record.auth_token);
  const statePayload = signPayload(buildStatePayload({ ...common, data: undefined, status: record.status, lastEvent: event }), record.auth_token);
  return { eventPayload, statePayload };
}

/**
 * The disk half of a publish (contract §3): under the registry lock, check the transition, take
 * `last_seq + 1`, update status and append the signed payload to the audit log. The heartbeat timer
 * commits its beats through here too, then sends them on its own long-lived connection.
 */
export async function commitEvent(config: MamConfig, registry: Registry, req: Omit<PublishRequest, 'attempts'>): Promise<PublishResult> {
  let signed: ReturnType<typeof signedPair> | undefined;
  const { record, seq } = await registry.update(
    req.jobId,
    { kind: 'event', event: req.event, dispatchToken: req.expectDispatchToken, attemptId: req.expectAttemptId },
    req.source ?? 'agent',
    {
      check: req.check,
      audit: (next, seq) => {
        const rawDetail = req.detail ?? defaultDetail(next.job_id, req.event);
        const detail = scrubDetail(rawDetail, { workspaceRoot: config.root, secrets: detailSecrets(config, next) });
        signed = signedPair(next, seq!, req.event, detail, req.data);
        return [{ type: 'published', seq, event: req.event, payload: new JsonText(wireJson(signed.eventPayload)) }];
      },
    },
  );
  return { record, seq: seq!, event: signed!.eventPayload, state: signed!.statePayload };
}

/** Event (retained when terminal), then the retained state, in that order on one connection. */
export function wireMessages(config: MamConfig, result: PublishResult): OutgoingMessage[] {
  const jobId = result.record.job_id;
  return [
    { topic: eventsTopic(config.topicRoot, jobId), payload: wireJson(result.event), retain: isTerminalEvent(result.event.event) },
    { topic: stateTopic(config.topicRoot, jobId), payload: wireJson(result.state), retain: true },
  ];
}

/**
 * `mam-publish` (contract §3): commit on disk, then deliver event + retained state on a fresh
 * connection. The connection is opened first, so its handshake overlaps the disk work; a refusal
 * closes it unused. A terminal event first fences and stops the job's heartbeat (contract §5).
 */
export async function publishEvent(config: MamConfig, registry: Registry, req: PublishRequest): Promise<PublishResult> {
  const before = registry.read(req.jobId);
  const target = resolveBrokerTarget(config.broker, before);
  const first = openSession(target, 'pub');
  let result: PublishResult;
  try {
    if (isTerminalEvent(req.event)) await fenceHeartbeat(registry, req, config.heartbeatDrainSec * 1000);
    result = await commitEvent(config, registry, req);
  } catch (err) {
    first.session.destroy();
    throw err;
  }
  try {
    await deliver(target, wireMessages(config, result), { attempts: req.attempts, firstSession: first });
  } catch (err) {
    registry.audit.append(result.record.job_id, {
      type: 'publish_failed',
      seq: result.seq,
      event: req.event,
      attempts: req.attempts,
      reason: (err as Error).message,
    });
    throw new NotDelivered(result, err as Error);
  }
  return result;
}
