import { type Stats, statSync } from 'node:fs';
import { NoSuchJob } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { JobRecord } from '../registry/job-record.ts';
import { isJobId } from '../vocabulary.ts';
import type { Registry } from '../registry/registry.ts';
import { parseWirePayload } from '../wire/canonical-json.ts';
import { MAX_WIRE_BYTES, type PayloadFields, checkPayloadFast, eventPayloadSchema, statePayloadSchema } from '../wire/payloads.ts';
import { verifyPayload } from '../wire/signature.ts';
import { parseTopic } from '../wire/topics.ts';
import type { VerifiedMessage } from './verified-message.ts';

/** Why a message was discarded; each is audited as `rejected` with this reason (contract §2, §4). */
export type RejectReason = 'oversized' | 'topic' | 'json' | 'schema' | 'unknown_job' | 'corrupt_record' | 'hmac' | 'stale_attempt';

export type Verdict =
  | { ok: true; message: VerifiedMessage; record: JobRecord }
  | { ok: false; reason: RejectReason; jobId?: string | undefined; seq?: number | undefined; detail?: string }
  /** Not for us (another job under `--job`, an empty retained clear): dropped without a word. */
  | { ok: false; reason: 'ignored' };

interface CachedRecord {
  record: JobRecord;
  file: string;
  mtimeMs: number;
  size: number;
  /** The batch in which the file was last checked (see `verify`'s `batch`). */
  batch?: number | undefined;
}

/**
 * Contract §4, "a message is accepted only if …", in order: size, topic, JSON, schema, the job
 * named on its own topic, HMAC with the job's token from the registry, the current attempt. It
 * never throws on input. Records are cached and re-read when their file changes, so a redispatch
 * or a close is seen at the next message.
 */
export class MessageVerifier {
  private readonly records = new Map<string, CachedRecord>();

  constructor(
    private readonly topicRoot: string,
    private readonly registry: Registry,
    private readonly watches: (jobId: string) => boolean,
  ) {}

  /**
   * `batch` names a batch of messages that had all arrived before it began: within one, each job's
   * record file is checked once, not once per message (a stat per message was a sixth of a monitor's
   * time). A record checked during the batch is at least as new as any message in it, so a
   * redispatch is still seen before the first message signed for the new attempt.
   */
  verify(topic: string, payload: Uint8Array, retained: boolean, batch?: number): Verdict {
    const where = parseTopic(this.topicRoot, topic);
    if (!where) return { ok: false, reason: 'topic', detail: topic };
    // Dispatches and permission answers share the per-job filter; they are the remote runner's and
    // the waiting agent's business, not a watcher's.
    if (where.kind === 'dispatch' || where.kind === 'control') return { ok: false, reason: 'ignored' };
    const { jobId } = where;
    if (!this.watches(jobId) || payload.length === 0) return { ok: false, reason: 'ignored' };
    // `--all` subscribes `<root>/+/…`: anyone can publish under a level that is no job id, and it
    // must not reach the registry, whose paths refuse such an id (by throwing).
    if (!isJobId(jobId)) return { ok: false, reason: 'topic', detail: topic };
    if (payload.length > MAX_WIRE_BYTES) return { ok: false, reason: 'oversized', jobId, detail: `${payload.length} bytes` };
    let parsed: unknown;
    let wireText: string | undefined;
    try {
      ({ value: parsed, compactText: wireText } = parseWirePayload(payload));
    } catch (err) {
      return { ok: false, reason: 'json', jobId, detail: (err as Error).message };
    }
    const kind = where.kind;
    let p: PayloadFields | undefined = checkPayloadFast(parsed, kind);
    if (!p) {
      const valid = kind === 'events' ? eventPayloadSchema.safeParse(parsed) : statePayloadSchema.safeParse(parsed);
      if (!valid.success) {
        const issue = valid.error.issues[0]!;
        return { ok: false, reason: 'schema', jobId, detail: `${issue.path.join('.')}: ${issue.message}` };
      }
      p = valid.data;
    }
    if (p.job_id !== jobId) return { ok: false, reason: 'topic', jobId, seq: p.seq, detail: `payload names job ${p.job_id}` };
    let record: JobRecord;
    try {
      record = this.record(jobId, batch);
    } catch (err) {
      if (err instanceof NoSuchJob) return { ok: false, reason: 'unknown_job', jobId, seq: p.seq };
      return { ok: false, reason: 'corrupt_record', jobId, seq: p.seq, detail: (err as Error).message };
    }
    if (!verifyPayload(parsed, record.auth_token)) return { ok: false, reason: 'hmac', jobId, seq: p.seq };
    // Signed with this job's token, so from one of its attempts: only the current one counts; an
    // earlier attempt's retained terminal event or state must never be taken as the outcome.
    if (p.data.attempt_id !== record.attempt_id || p.data.dispatch_token !== record.dispatch_token) {
      return { ok: false, reason: 'stale_attempt', jobId, seq: p.seq, detail: `attempt ${p.data.attempt_id}, current ${record.attempt_id}` };
    }
    const message: VerifiedMessage =
      p.event === 'state'
        ? { kind: 'state', jobId, seq: p.seq, status: p.status, lastEvent: p.last_event, payload: parsed, wireText, retained }
        : { kind: 'event', jobId, seq: p.seq, event: p.event, payload: parsed, wireText, timestamp: timestampOf(parsed) };
    return { ok: true, message, record };
  }

  /** The job's record, re-read only when its file changed (a stat per call, or per `batch`, not a parse). */
  record(jobId: string, batch?: number): JobRecord {
    const cached = this.records.get(jobId);
    if (batch !== undefined && cached?.batch === batch) return cached.record;
    const file = cached?.file ?? this.registry.paths.record(jobId);
    let stat: Stats;
    try {
      stat = statSync(file);
    } catch {
      this.records.delete(jobId);
      throw new NoSuchJob(jobId);
    }
    if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) {
      cached.batch = batch;
      return cached.record;
    }
    const record = this.registry.read(jobId);
    this.records.set(jobId, { record, file, mtimeMs: stat.mtimeMs, size: stat.size, batch });
    return record;
  }
}

/** The payload's `timestamp` when it is a string (the schema checked its form). */
function timestampOf(parsed: unknown): string | undefined {
  const t = (parsed as { timestamp?: unknown }).timestamp;
  return typeof t === 'string' ? t : undefined;
}

/**
 * A discarded message, audited as `rejected` in the job's log when this registry has the job (a
 * forgery aimed at a running job is evidence), else logged. `ignored` ones pass without a word.
 */
export function auditRejection(registry: Registry, log: Logger, topic: string, verdict: Extract<Verdict, { ok: false }>): void {
  if (verdict.reason === 'ignored') return;
  const entry = { type: 'rejected' as const, reason: verdict.reason, topic, seq: verdict.seq, detail: verdict.detail };
  if (verdict.jobId && verdict.reason !== 'unknown_job' && registry.exists(verdict.jobId)) registry.audit.append(verdict.jobId, entry);
  else log.warn(entry, 'message rejected');
}
