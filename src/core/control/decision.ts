import { isLosslessNumber } from 'lossless-json';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import type { JobRecord } from '../registry/job-record.ts';
import { jobIdSchema } from '../vocabulary.ts';
import { parseWireJson } from '../wire/canonical-json.ts';
import { wireTimestamp, wireTimestampSchema } from '../timestamps.ts';
import { type Signed, signPayload, verifyPayload } from '../wire/signature.ts';

/**
 * A permission answer (docs/permissions.md): an operator's signed `allow` or `deny` for one
 * `permission_required` event, published on `<root>/<id>/control` (QoS 1, never retained: an answer
 * left on the broker would greet every later request of the job). It is signed like an event
 * (contract §3: `data.hmac_sig` over the canonical JSON, keyed by the job's `auth_token`) and fenced
 * twice: by the attempt (`attempt_id` + `dispatch_token` must be the record's current ones) and by
 * the request (`request_seq` must be the seq of the request being waited on), so a decision captured
 * off the wire answers its own request and nothing else.
 */

export const DECISIONS = ['allow', 'deny'] as const;
export type DecisionKind = (typeof DECISIONS)[number];

/** Why a decision message was refused; audited as `rejected` with this reason. */
export const DECISION_REJECT_REASONS = ['schema', 'wrong_job', 'bad_signature', 'stale_attempt', 'not_pending'] as const;
export type DecisionRejectReason = (typeof DECISION_REJECT_REASONS)[number];

/**
 * Receivers drop anything longer before parsing it: a decision is an envelope and a reason of at most
 * `MAX_REASON_CHARS` characters, which even escaped as `\uXXXX` stays well under this.
 */
export const MAX_DECISION_BYTES = 16 * 1024;
/** The reason is shown to the agent (Claude's deny message) and kept in audits: a sentence, not a file. */
export const MAX_REASON_CHARS = 1000;

// As in wire/payloads.ts: the parsed payload holds LosslessNumbers; an integer lexeme becomes a
// number, `7.0` stays refused (Python's isinstance(x, int) would refuse it).
const fromLexeme = (value: unknown): unknown => (isLosslessNumber(value) && /^-?\d+$/.test(value.value) ? Number(value.value) : value);
const positiveInt = z.pipe(z.transform(fromLexeme), z.int().check(z.minimum(1)));

/** Unknown keys are kept at both levels, as for events: a newer sender may add some. */
export const decisionPayloadSchema = z.looseObject({
  schema_version: z.pipe(z.transform(fromLexeme), z.literal(1)),
  job_id: jobIdSchema,
  event: z.literal('decision'),
  request_seq: positiveInt,
  decision: z.enum(DECISIONS),
  reason: z.string().check(z.maxLength(MAX_REASON_CHARS)),
  timestamp: wireTimestampSchema,
  data: z.looseObject({
    hmac_sig: z.string().check(z.regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits')),
    dispatch_token: z.string(),
    attempt_id: positiveInt,
  }),
});
export type DecisionPayload = z.output<typeof decisionPayloadSchema>;

export interface UnsignedDecisionPayload {
  schema_version: 1;
  job_id: string;
  event: 'decision';
  request_seq: number;
  decision: DecisionKind;
  reason: string;
  timestamp: string;
  data: { dispatch_token: string; attempt_id: number };
}

export interface DecisionInput {
  requestSeq: number;
  decision: DecisionKind;
  /** Already scrubbed (send-decision.ts does it with the configuration's secrets). */
  reason: string;
  now?: Date | undefined;
}

/** The decision for the record's current attempt, signed with the job's token. */
export function signDecision(record: JobRecord, input: DecisionInput): Signed<UnsignedDecisionPayload> {
  const unsigned: UnsignedDecisionPayload = {
    schema_version: 1,
    job_id: record.job_id,
    event: 'decision',
    request_seq: input.requestSeq,
    decision: input.decision,
    reason: input.reason,
    timestamp: wireTimestamp(input.now ?? new Date()),
    data: { dispatch_token: record.dispatch_token, attempt_id: record.attempt_id },
  };
  return signPayload(unsigned, record.auth_token);
}

/** The request a waiter is waiting on: the seq of its `permission_required` event and its attempt. */
export interface PendingRequest {
  attemptId: number;
  seq: number;
}

export type DecisionVerdict =
  | { ok: true; payload: DecisionPayload }
  | { ok: false; reason: DecisionRejectReason; requestSeq?: number | undefined; detail?: string | undefined };

/**
 * Everything but the request fence, in order: size and JSON (`schema`), the schema, the job it
 * names (`wrong_job`), the HMAC with the record's token (`bad_signature`), the record's current
 * attempt (`stale_attempt`). Never throws: it runs on whatever the broker hands over.
 */
export function checkDecision(raw: Uint8Array | string, record: JobRecord): DecisionVerdict {
  const size = typeof raw === 'string' ? Buffer.byteLength(raw, 'utf8') : raw.length;
  if (size > MAX_DECISION_BYTES) return { ok: false, reason: 'schema', detail: `${size} bytes, over ${MAX_DECISION_BYTES}` };
  let parsed: unknown;
  try {
    parsed = parseWireJson(raw);
  } catch (err) {
    return { ok: false, reason: 'schema', detail: `not JSON: ${(err as Error).message}` };
  }
  const valid = decisionPayloadSchema.safeParse(parsed);
  if (!valid.success) {
    const issue = valid.error.issues[0]!;
    return { ok: false, reason: 'schema', detail: `${issue.path.join('.')}: ${issue.message}` };
  }
  const p = valid.data;
  const requestSeq = p.request_seq;
  if (p.job_id !== record.job_id) return { ok: false, reason: 'wrong_job', requestSeq, detail: `payload names job ${p.job_id}` };
  if (!verifyPayload(parsed, record.auth_token)) return { ok: false, reason: 'bad_signature', requestSeq };
  if (p.data.attempt_id !== record.attempt_id || p.data.dispatch_token !== record.dispatch_token) {
    return { ok: false, reason: 'stale_attempt', requestSeq, detail: `attempt ${p.data.attempt_id}, current ${record.attempt_id}` };
  }
  return { ok: true, payload: p };
}

/**
 * `checkDecision`, then the request fence: the decision must answer `pending` — its attempt, and
 * its seq (`not_pending` is what a replayed answer to an earlier request gets).
 */
export function verifyDecision(raw: Uint8Array | string, record: JobRecord, pending: PendingRequest): DecisionVerdict {
  const verdict = checkDecision(raw, record);
  if (!verdict.ok) return verdict;
  return fenceRequest(verdict.payload, pending) ?? verdict;
}

/** The refusal of a verified decision that does not answer `pending`, or undefined when it does. */
export function fenceRequest(payload: DecisionPayload, pending: PendingRequest): Extract<DecisionVerdict, { ok: false }> | undefined {
  const requestSeq = payload.request_seq;
  if (payload.data.attempt_id !== pending.attemptId) {
    return { ok: false, reason: 'stale_attempt', requestSeq, detail: `attempt ${payload.data.attempt_id}, request of attempt ${pending.attemptId}` };
  }
  if (requestSeq !== pending.seq) return { ok: false, reason: 'not_pending', requestSeq, detail: `answers seq ${requestSeq}, waiting on ${pending.seq}` };
  return undefined;
}
