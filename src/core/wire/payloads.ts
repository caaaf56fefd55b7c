import { isLosslessNumber } from 'lossless-json';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import { UsageError } from '../errors.ts';
import { WIRE_TIMESTAMP_PATTERN, wireTimestamp, wireTimestampSchema } from '../timestamps.ts';
import { JOB_STATUSES, type JobStatus, LIFECYCLE_EVENTS, type LifecycleEvent, RESERVED_DATA_KEYS, isJobId, jobIdSchema } from '../vocabulary.ts';
import { isPlainObject, normalizeForSigning, parseWireJson, wireJson } from './canonical-json.ts';
import { WireEncodeError, WireParseError } from './wire-errors.ts';

/** Contract §1: `--data` is an object of at most 64 KiB, measured as sent (compact, ASCII-escaped). */
export const MAX_DATA_BYTES = 64 * 1024;

/**
 * Receivers drop anything longer before parsing it. Our largest payload is 64 KiB of data plus a
 * detail (one argv string, at most 128 KiB on Linux) plus a few hundred bytes of envelope.
 */
export const MAX_WIRE_BYTES = 256 * 1024;

/**
 * Schemas run on what `parseWireJson` returns, where numbers are `LosslessNumber`s. The integer
 * fields accept one whose lexeme is an integer and hand zod a plain number; `7.0` stays refused, as
 * Python's `isinstance(x, int)` would refuse it. Everything else (the rest of `data`) passes through
 * untouched, so keep verifying the parsed value itself, not the schema's output.
 */
const fromLexeme = (value: unknown): unknown => (isLosslessNumber(value) && /^-?\d+$/.test(value.value) ? Number(value.value) : value);
const positiveInt = z.pipe(z.transform(fromLexeme), z.int().check(z.minimum(1)));

const HMAC_SIG = /^[0-9a-f]{64}$/;

const signedData = z.looseObject({
  hmac_sig: z.string().check(z.regex(HMAC_SIG, 'expected 64 lowercase hex digits')),
  dispatch_token: z.string(),
  attempt_id: positiveInt,
});

const envelope = {
  schema_version: z.pipe(z.transform(fromLexeme), z.literal(1)),
  seq: positiveInt,
  job_id: jobIdSchema,
  timestamp: wireTimestampSchema,
  detail: z.string(),
  data: signedData,
};

/** Unknown keys are kept at both levels: receivers accept what a newer sender adds. */
export const eventPayloadSchema = z.looseObject({ ...envelope, event: z.enum(LIFECYCLE_EVENTS) });
export const statePayloadSchema = z.looseObject({
  ...envelope,
  event: z.literal('state'),
  status: z.enum(JOB_STATUSES),
  last_event: z.string(),
});
export type EventPayload = z.output<typeof eventPayloadSchema>;
export type StatePayload = z.output<typeof statePayloadSchema>;

/** The fields of a valid payload that a receiver decides on, as the schemas output them. */
export type PayloadFields =
  | (Pick<EventPayload, 'seq' | 'job_id' | 'event'> & { data: Pick<EventPayload['data'], 'attempt_id' | 'dispatch_token'> })
  | (Pick<StatePayload, 'seq' | 'job_id' | 'event' | 'status' | 'last_event'> & { data: Pick<StatePayload['data'], 'attempt_id' | 'dispatch_token'> });

const EVENT_NAMES: ReadonlySet<string> = new Set(LIFECYCLE_EVENTS);
const STATUS_NAMES: ReadonlySet<string> = new Set(JOB_STATUSES);
/** An integer lexeme of 1 to 15 digits: at least 1 and below 10^15, so a safe integer. */
const SMALL_POSITIVE_INT = /^[1-9]\d{0,14}$/;

const smallPositiveInt = (value: unknown): number | undefined =>
  isLosslessNumber(value) && SMALL_POSITIVE_INT.test(value.value) ? Number(value.value) : undefined;

/**
 * `eventPayloadSchema` (kind `events`) or `statePayloadSchema` (kind `state`) for the payloads
 * senders write, without zod's cost on every message a monitor reads: the fields zod would output,
 * or undefined, and then zod decides (and words the refusal). Each check implies zod's: plain
 * objects where zod wants objects; `schema_version` the lexeme `1` (fromLexeme gives 1); `seq` and
 * `attempt_id` integer lexemes of 1–15 digits without a leading zero (fromLexeme gives an integer
 * from 1 to below 10^15, which z.int() and the minimum of 1 accept, the same number); the strings,
 * patterns and names of the schemas. Anything else (a JS number, a 16-digit seq) is left to zod.
 */
export function checkPayloadFast(parsed: unknown, kind: 'events' | 'state'): PayloadFields | undefined {
  if (!isPlainObject(parsed)) return undefined;
  const data = parsed.data;
  if (!isPlainObject(data)) return undefined;
  const version = parsed.schema_version;
  if (!isLosslessNumber(version) || version.value !== '1') return undefined;
  const seq = smallPositiveInt(parsed.seq);
  const attemptId = smallPositiveInt(data.attempt_id);
  if (seq === undefined || attemptId === undefined) return undefined;
  const { job_id: jobId, timestamp, detail, event } = parsed;
  if (typeof jobId !== 'string' || !isJobId(jobId)) return undefined;
  if (typeof timestamp !== 'string' || !WIRE_TIMESTAMP_PATTERN.test(timestamp) || typeof detail !== 'string') return undefined;
  const { hmac_sig: sig, dispatch_token: dispatchToken } = data;
  if (typeof sig !== 'string' || !HMAC_SIG.test(sig) || typeof dispatchToken !== 'string') return undefined;
  const fieldsData = { attempt_id: attemptId, dispatch_token: dispatchToken };
  if (kind === 'events') {
    if (typeof event !== 'string' || !EVENT_NAMES.has(event)) return undefined;
    return { seq, job_id: jobId, event: event as LifecycleEvent, data: fieldsData };
  }
  const { status, last_event: lastEvent } = parsed;
  if (event !== 'state' || typeof status !== 'string' || !STATUS_NAMES.has(status) || typeof lastEvent !== 'string') return undefined;
  return { seq, job_id: jobId, event, status: status as JobStatus, last_event: lastEvent, data: fieldsData };
}

export interface PayloadData {
  dispatch_token: string;
  attempt_id: number;
  [key: string]: unknown;
}

export interface UnsignedEventPayload {
  schema_version: 1;
  seq: number;
  job_id: string;
  event: LifecycleEvent;
  timestamp: string;
  detail: string;
  data: PayloadData;
}

export interface UnsignedStatePayload {
  schema_version: 1;
  seq: number;
  job_id: string;
  event: 'state';
  timestamp: string;
  status: JobStatus;
  last_event: string;
  detail: string;
  data: PayloadData;
}

interface CommonInput {
  jobId: string;
  seq: number;
  detail: string;
  /** The caller's `--data` keys (from `parseUserData`); they follow the publisher's own keys. */
  data?: Record<string, unknown> | undefined;
  dispatchToken: string;
  attemptId: number;
  now?: Date | undefined;
}

export interface EventPayloadInput extends CommonInput {
  event: LifecycleEvent;
}

export interface StatePayloadInput extends CommonInput {
  status: JobStatus;
  lastEvent: string;
}

/** Key order is the Python toolkit's; receivers do not care, but diffs and logs read alike. */
export function buildEventPayload(input: EventPayloadInput): UnsignedEventPayload {
  return {
    schema_version: 1,
    seq: input.seq,
    job_id: input.jobId,
    event: input.event,
    timestamp: wireTimestamp(input.now ?? new Date()),
    detail: input.detail,
    data: buildData(input),
  };
}

export function buildStatePayload(input: StatePayloadInput): UnsignedStatePayload {
  return {
    schema_version: 1,
    seq: input.seq,
    job_id: input.jobId,
    event: 'state',
    timestamp: wireTimestamp(input.now ?? new Date()),
    status: input.status,
    last_event: input.lastEvent,
    detail: input.detail,
    data: buildData(input),
  };
}

function buildData(input: CommonInput): PayloadData {
  const extra = input.data ?? {};
  const clash = RESERVED_DATA_KEYS.find((key) => Object.hasOwn(extra, key));
  if (clash !== undefined) throw new WireEncodeError(`data.${clash} is set by the publisher`);
  return { dispatch_token: input.dispatchToken, attempt_id: input.attemptId, ...extra };
}

/**
 * The `--data` flag: a JSON object of at most `MAX_DATA_BYTES` as sent, none of the reserved keys,
 * numbers re-spelled the way Python writes them. Every refusal is a one-line `UsageError`.
 */
export function parseUserData(text: string): Record<string, unknown> {
  // Parse cost stays bounded whatever the caller pipes in; whitespace may make the text longer than sent.
  if (Buffer.byteLength(text, 'utf8') > 4 * MAX_DATA_BYTES) {
    throw new UsageError(`--data: larger than ${MAX_DATA_BYTES} bytes`);
  }
  let parsed: unknown;
  try {
    parsed = parseWireJson(text);
  } catch (err) {
    throw new UsageError(`--data: not valid JSON (${reasonOf(err)})`);
  }
  if (!isPlainObject(parsed)) throw new UsageError(`--data: must be a JSON object, got ${describe(parsed)}`);
  const clash = RESERVED_DATA_KEYS.find((key) => Object.hasOwn(parsed, key));
  if (clash !== undefined) throw new UsageError(`--data: the key "${clash}" is reserved (set by mam-publish)`);
  let data: Record<string, unknown>;
  let sent: string;
  try {
    data = normalizeForSigning(parsed) as Record<string, unknown>;
    sent = wireJson(data);
  } catch (err) {
    throw new UsageError(`--data: ${reasonOf(err)}`);
  }
  // wireJson writes ASCII only, so its length is its size in bytes.
  if (sent.length > MAX_DATA_BYTES) {
    throw new UsageError(`--data: ${sent.length} bytes as sent, over the limit of ${MAX_DATA_BYTES}`);
  }
  return data;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (isLosslessNumber(value)) return 'a number';
  return `a ${typeof value}`;
}

function reasonOf(err: unknown): string {
  const why = err instanceof WireParseError || err instanceof WireEncodeError ? err.reason : String(err);
  return why.replace(/\s+/g, ' ').trim();
}
