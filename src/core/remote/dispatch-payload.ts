import { isLosslessNumber } from 'lossless-json';
import * as z from 'zod/mini';
import { MamError } from '../errors.ts';
import type { JobRecord } from '../registry/job-record.ts';
import { parseWireJson } from '../wire/canonical-json.ts';
import { wireTimestamp } from '../timestamps.ts';
import { MAX_WIRE_BYTES } from '../wire/payloads.ts';
import { signPayload, verifyPayload } from '../wire/signature.ts';
import { type SealedToken, openToken, sealToken } from './token-envelope.ts';

const fromLexeme = (v: unknown): unknown => (isLosslessNumber(v) ? Number(v.value) : v);
const num = <T extends z.ZodMiniType>(schema: T) => z.pipe(z.transform(fromLexeme), schema);

/**
 * The retained dispatch of contract §6. The timing contract travels as `contract`, the sealed token
 * as `data.auth_token_enc`; the whole is signed like an event, keyed by `MAM_DISPATCH_SECRET`.
 */
export const dispatchPayloadSchema = z.looseObject({
  schema_version: num(z.literal(1)),
  job_id: z.string().check(z.regex(/^[0-9a-f]{8}$/)),
  event: z.literal('dispatch'),
  timestamp: z.string(),
  session: z.string().check(z.minLength(1)),
  brief: z.string(),
  dispatch_token: z.string().check(z.regex(/^[0-9a-f]{32}$/)),
  attempt_id: num(z.int().check(z.minimum(1))),
  last_seq: num(z.int().check(z.minimum(0))),
  contract: z.object({
    heartbeat_sec: num(z.number().check(z.positive())),
    heartbeat_misses: num(z.int().check(z.minimum(1))),
    ack_timeout_sec: num(z.number().check(z.positive())),
    idle_timeout_sec: num(z.number().check(z.positive())),
    timeout_sec: num(z.number().check(z.positive())),
  }),
  data: z.looseObject({
    auth_token_enc: z.object({ iv: z.string(), ct: z.string(), tag: z.string() }),
    hmac_sig: z.string(),
  }),
});
export type DispatchPayload = z.infer<typeof dispatchPayloadSchema>;

export function requireDispatchSecret(secret: string | undefined): string {
  if (!secret) throw new MamError('MAM_DISPATCH_SECRET is not set: remote dispatch needs the same secret on both hosts');
  return secret;
}

export function buildDispatch(record: JobRecord, session: string, secret: string, now = new Date()) {
  const unsigned = {
    schema_version: 1 as const,
    job_id: record.job_id,
    event: 'dispatch' as const,
    timestamp: wireTimestamp(now),
    session,
    brief: record.brief,
    dispatch_token: record.dispatch_token,
    attempt_id: record.attempt_id,
    last_seq: record.last_seq,
    contract: {
      heartbeat_sec: record.heartbeat_sec,
      heartbeat_misses: record.heartbeat_misses,
      ack_timeout_sec: record.ack_timeout_sec,
      idle_timeout_sec: record.idle_timeout_sec,
      timeout_sec: record.timeout_sec,
    },
    data: { auth_token_enc: sealToken(record.auth_token, secret, record.job_id) as SealedToken },
  };
  return signPayload(unsigned, secret);
}

export type DispatchVerdict = { ok: true; dispatch: DispatchPayload; authToken: string } | { ok: false; reason: string };

/** Parse, schema, the job on its own topic, HMAC with the shared secret, then the token opens. Never throws. */
export function verifyDispatch(payload: Uint8Array, topicJobId: string, secret: string): DispatchVerdict {
  if (payload.length > MAX_WIRE_BYTES) return { ok: false, reason: 'oversized' };
  let parsed: unknown;
  try {
    parsed = parseWireJson(payload);
  } catch {
    return { ok: false, reason: 'json' };
  }
  const valid = dispatchPayloadSchema.safeParse(parsed);
  if (!valid.success) return { ok: false, reason: 'schema' };
  if (valid.data.job_id !== topicJobId) return { ok: false, reason: 'topic' };
  if (!verifyPayload(parsed, secret)) return { ok: false, reason: 'hmac' };
  try {
    return { ok: true, dispatch: valid.data, authToken: openToken(valid.data.data.auth_token_enc, secret, valid.data.job_id) };
  } catch {
    return { ok: false, reason: 'token' };
  }
}

/** The runner's copy of the job: the same identity, so events it signs verify on the delegator's side. */
export function recordFromDispatch(d: DispatchPayload, authToken: string, now = new Date().toISOString()): JobRecord {
  return {
    job_id: d.job_id,
    status: 'pending',
    created_at: now,
    updated_at: now,
    agent_session: d.session,
    brief: d.brief,
    last_seq: d.last_seq,
    auth_token: authToken,
    dispatch_token: d.dispatch_token,
    attempt_id: d.attempt_id,
    transition_seq: 0,
    heartbeat_sec: d.contract.heartbeat_sec,
    heartbeat_misses: d.contract.heartbeat_misses,
    ack_timeout_sec: d.contract.ack_timeout_sec,
    idle_timeout_sec: d.contract.idle_timeout_sec,
    timeout_sec: d.contract.timeout_sec,
    transport: 'remote',
    depends_on: [],
    detail: null,
  };
}
