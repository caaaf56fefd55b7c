import * as z from 'zod/mini';
import '../zod-messages.ts';
import { ISO_MILLIS_PATTERN, isoMillisSchema } from '../timestamps.ts';
import { DISPATCH_TOKEN_PATTERN, JOB_STATUSES, TRANSPORTS, dispatchTokenSchema, isJobId, jobIdSchema } from '../vocabulary.ts';

/** A job's own broker settings, overriding the configuration's. Never a password (contract §7). */
export const brokerOverrideSchema = z.looseObject({
  host: z.optional(z.string().check(z.minLength(1))),
  port: z.optional(z.int().check(z.minimum(1)).check(z.maximum(65535))),
  tls: z.optional(z.boolean()),
  username: z.optional(z.string()),
  ca_certs: z.optional(z.string()),
  certfile: z.optional(z.string()),
  keyfile: z.optional(z.string()),
});

/**
 * The job record (contract §2). `looseObject` keeps fields this version does not know, so a
 * record written by a newer tool (or the Python toolkit) survives a round trip through this one.
 */
export const jobRecordSchema = z.looseObject({
  job_id: jobIdSchema,
  status: z.enum(JOB_STATUSES),
  created_at: isoMillisSchema,
  updated_at: isoMillisSchema,
  agent_session: z.nullable(z.string()),
  brief: z.string(),
  last_seq: z.int().check(z.minimum(0)),
  auth_token: z.string().check(z.minLength(16)),
  dispatch_token: dispatchTokenSchema,
  attempt_id: z.int().check(z.minimum(1)),
  transition_seq: z.int().check(z.minimum(0)),
  heartbeat_sec: z.number().check(z.positive()),
  heartbeat_misses: z.int().check(z.minimum(1)),
  ack_timeout_sec: z.number().check(z.positive()),
  idle_timeout_sec: z.number().check(z.positive()),
  timeout_sec: z.number().check(z.positive()),
  transport: z.enum(TRANSPORTS),
  depends_on: z.array(jobIdSchema),
  detail: z.nullable(z.string()),
  broker: z.optional(brokerOverrideSchema),
  /**
   * The session named at registration (null: any). A pick writes the claiming session into
   * `agent_session`; a redispatch puts this one back, so the new attempt is open to the same
   * sessions as the first. Absent in records written by the Python toolkit: then kept as is.
   */
  registered_session: z.optional(z.nullable(z.string())),
  /**
   * Who the job is for (`mam-register --to`): an agent's name or `capability:<name>`
   * (src/core/fleet/addressing.ts). Absent in older records: the job is for anyone.
   */
  to: z.optional(z.nullable(z.string())),
});

export type JobRecord = z.infer<typeof jobRecordSchema>;

/**
 * A record without its `auth_token`: what is printed or logged. Not `Omit`: over the index signature
 * of a loose object it keeps only that signature, and every known field would read as `unknown`.
 */
export type PublicJobRecord = { [K in keyof JobRecord as K extends 'auth_token' ? never : K]: JobRecord[K] };

/** What is printed or logged: the record without its secret. */
export function publicView(record: JobRecord): PublicJobRecord {
  const { auth_token: _secret, ...rest } = record;
  return rest;
}

const RECORD_KEYS = new Set(Object.keys(jobRecordSchema.def.shape));
const STATUSES = new Set<unknown>(JOB_STATUSES);
const TRANSPORT_NAMES = new Set<unknown>(TRANSPORTS);

const isIsoMillis = (v: unknown) => typeof v === 'string' && ISO_MILLIS_PATTERN.test(v);
const isIntAtLeast = (v: unknown, min: number) => Number.isSafeInteger(v) && (v as number) >= min;
const isPositive = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v > 0;
const isNullableString = (v: unknown) => v === null || typeof v === 'string';

/**
 * zod's result for a record that `jobRecordSchema` accepts, checked by hand: in a cold process zod
 * takes ~120–200 µs a record for its first hundred or so calls (a monitor's first sight of each of
 * its jobs, `mam jobs`, the registry poll), this a few. It returns what zod returns — known fields
 * in the schema's order, then unknown ones as they came (looseObject keeps them), arrays copied —
 * or undefined whenever it is not sure: never a refusal of its own, zod then decides and words it.
 * A `broker` block and a `__proto__` key are left to zod. test/core/registry/record-fast-check
 * holds it against zod.
 */
export function checkRecordFast(raw: unknown): JobRecord | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const r = raw as Record<string, unknown>;
  if (typeof r.job_id !== 'string' || !isJobId(r.job_id) || !STATUSES.has(r.status)) return undefined;
  if (!isIsoMillis(r.created_at) || !isIsoMillis(r.updated_at)) return undefined;
  if (!isNullableString(r.agent_session) || typeof r.brief !== 'string' || !isNullableString(r.detail)) return undefined;
  if (typeof r.auth_token !== 'string' || r.auth_token.length < 16) return undefined;
  if (typeof r.dispatch_token !== 'string' || !DISPATCH_TOKEN_PATTERN.test(r.dispatch_token)) return undefined;
  if (!isIntAtLeast(r.last_seq, 0) || !isIntAtLeast(r.attempt_id, 1) || !isIntAtLeast(r.transition_seq, 0)) return undefined;
  if (!isIntAtLeast(r.heartbeat_misses, 1) || !isPositive(r.heartbeat_sec)) return undefined;
  if (!isPositive(r.ack_timeout_sec) || !isPositive(r.idle_timeout_sec) || !isPositive(r.timeout_sec)) return undefined;
  if (!TRANSPORT_NAMES.has(r.transport) || r.broker !== undefined) return undefined;
  const deps = r.depends_on;
  if (!Array.isArray(deps) || !deps.every((d) => typeof d === 'string' && isJobId(d))) return undefined;
  if (!(r.registered_session === undefined || isNullableString(r.registered_session))) return undefined;
  if (!(r.to === undefined || isNullableString(r.to))) return undefined;

  const out: Record<string, unknown> = {};
  for (const key of RECORD_KEYS) if (key in r) out[key] = key === 'depends_on' ? [...deps] : r[key];
  for (const key of Object.keys(r)) {
    if (RECORD_KEYS.has(key)) continue;
    if (key === '__proto__') return undefined;
    out[key] = r[key];
  }
  return out as JobRecord;
}
