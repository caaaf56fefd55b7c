import { readFileSync } from 'node:fs';
import { LosslessNumber } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/core/errors.ts';
import { TERMINAL_EVENTS, isTerminalEvent } from '../../../src/core/vocabulary.ts';
import { parseWireJson, wireJson } from '../../../src/core/wire/canonical-json.ts';
import {
  buildEventPayload,
  buildStatePayload,
  eventPayloadSchema,
  MAX_DATA_BYTES,
  parseUserData,
  statePayloadSchema,
} from '../../../src/core/wire/payloads.ts';
import { signPayload, verifyPayload } from '../../../src/core/wire/signature.ts';
import { WireEncodeError } from '../../../src/core/wire/wire-errors.ts';
import { wireTimestamp } from '../../../src/core/timestamps.ts';

const vectors = (
  JSON.parse(readFileSync(new URL('../../fixtures/hmac.json', import.meta.url), 'utf8')) as {
    vectors: { name: string; wire: string }[];
  }
).vectors;

const common = {
  jobId: '918b0612',
  seq: 2,
  detail: 'Section 1 done',
  dispatchToken: '5f0c6f1e2b3a4d5e8f9a0b1c2d3e4f50',
  attemptId: 1,
  now: new Date('2026-06-20T14:48:58.750Z'),
};

const good = (): Record<string, unknown> =>
  parseWireJson(wireJson(signPayload(buildEventPayload({ ...common, event: 'progress' }), 'k'))) as Record<string, unknown>;

describe('payload schemas', () => {
  it('accept every vector as it comes off the wire (numbers as LosslessNumber)', () => {
    for (const { name, wire } of vectors) {
      const schema = name.startsWith('state') ? statePayloadSchema : eventPayloadSchema;
      const result = schema.safeParse(parseWireJson(wire));
      expect(result.success, name).toBe(true);
      if (result.success) expect(typeof result.data.seq).toBe('number');
    }
  });

  it('keep unknown keys at the top level and in data', () => {
    const payload: Record<string, unknown> = { ...good(), extra: 'x' };
    (payload.data as Record<string, unknown>).custom = new LosslessNumber('1.0');
    const parsed = eventPayloadSchema.parse(payload);
    expect(parsed.extra).toBe('x');
    expect(parsed.data.custom).toEqual(new LosslessNumber('1.0'));
  });

  const bad: Record<string, (p: Record<string, unknown>) => void> = {
    'schema_version 2': (p) => (p.schema_version = new LosslessNumber('2')),
    'schema_version 1.0': (p) => (p.schema_version = new LosslessNumber('1.0')),
    'seq 0': (p) => (p.seq = new LosslessNumber('0')),
    'seq 1.0 (a float)': (p) => (p.seq = new LosslessNumber('1.0')),
    'seq as a string': (p) => (p.seq = '2'),
    'seq beyond 2^53': (p) => (p.seq = new LosslessNumber('9007199254740993')),
    'job_id upper case': (p) => (p.job_id = '918B0612'),
    'job_id too short': (p) => (p.job_id = '918b061'),
    'unknown event': (p) => (p.event = 'finished'),
    'event state': (p) => (p.event = 'state'),
    'timestamp with milliseconds': (p) => (p.timestamp = '2026-06-20T14:48:58.000Z'),
    'timestamp with an offset': (p) => (p.timestamp = '2026-06-20T14:48:58+00:00'),
    'detail missing': (p) => delete p.detail,
    'data an array': (p) => (p.data = []),
    'hmac_sig missing': (p) => delete (p.data as Record<string, unknown>).hmac_sig,
    'hmac_sig upper case': (p) => {
      const data = p.data as Record<string, string>;
      data.hmac_sig = data.hmac_sig!.toUpperCase();
    },
    'dispatch_token missing': (p) => delete (p.data as Record<string, unknown>).dispatch_token,
    'attempt_id 0': (p) => ((p.data as Record<string, unknown>).attempt_id = new LosslessNumber('0')),
  };

  it.each(Object.keys(bad))('refuse an event with %s', (name) => {
    const payload = good();
    bad[name]!(payload);
    expect(eventPayloadSchema.safeParse(payload).success).toBe(false);
  });

  it('tell events and states apart', () => {
    const state = parseWireJson(wireJson(signPayload(buildStatePayload({ ...common, status: 'completed', lastEvent: 'completed' }), 'k')));
    expect(statePayloadSchema.safeParse(state).success).toBe(true);
    expect(eventPayloadSchema.safeParse(state).success).toBe(false);
    expect(statePayloadSchema.safeParse(good()).success).toBe(false);
    expect(statePayloadSchema.safeParse({ ...(state as object), status: 'done' }).success).toBe(false);
  });
});

describe('builders', () => {
  it('write event keys in the Python toolkit order, publisher keys first in data', () => {
    const payload = buildEventPayload({ ...common, event: 'progress', data: { custom_metric: 42 } });
    expect(Object.keys(payload)).toEqual(['schema_version', 'seq', 'job_id', 'event', 'timestamp', 'detail', 'data']);
    expect(Object.keys(payload.data)).toEqual(['dispatch_token', 'attempt_id', 'custom_metric']);
    expect(payload.timestamp).toBe('2026-06-20T14:48:58Z');
  });

  it('write state keys in order', () => {
    const payload = buildStatePayload({ ...common, status: 'error', lastEvent: 'deadline_timeout' });
    expect(Object.keys(payload)).toEqual(['schema_version', 'seq', 'job_id', 'event', 'timestamp', 'status', 'last_event', 'detail', 'data']);
    expect(payload.event).toBe('state');
  });

  it('give signed payloads that validate and verify', () => {
    const signed = signPayload(buildEventPayload({ ...common, event: 'completed', data: parseUserData('{"r": 1.5}') }), 'k');
    const parsed = parseWireJson(wireJson(signed));
    expect(eventPayloadSchema.safeParse(parsed).success).toBe(true);
    expect(verifyPayload(parsed, 'k')).toBe(true);
  });

  it('refuse reserved keys in the caller data', () => {
    expect(() => buildEventPayload({ ...common, event: 'progress', data: { attempt_id: 9 } })).toThrow(WireEncodeError);
  });

  it('format timestamps in UTC without milliseconds, truncating', () => {
    expect(wireTimestamp(new Date('2026-01-02T03:04:05.999Z'))).toBe('2026-01-02T03:04:05Z');
  });

  it('know the terminal events', () => {
    expect(TERMINAL_EVENTS).toEqual(['completed', 'error']);
    expect(isTerminalEvent('completed')).toBe(true);
    expect(isTerminalEvent('error')).toBe(true);
    expect(isTerminalEvent('progress')).toBe(false);
    expect(isTerminalEvent('state')).toBe(false);
  });
});

describe('parseUserData', () => {
  it('returns the object with numbers spelled as Python writes them', () => {
    const data = parseUserData('{"a": 1E5, "b": [1e-7, 10000000000000000000000], "c": {"d": 2}, "e": "é"}');
    expect(wireJson(data)).toBe('{"a":100000.0,"b":[1e-07,10000000000000000000000],"c":{"d":2},"e":"\\u00e9"}');
  });

  it.each([
    ['[1, 2]', /must be a JSON object, got an array/],
    ['"x"', /got a string/],
    ['null', /got null/],
    ['42', /got a number/],
    ['', /not valid JSON/],
    ['{a: 1}', /not valid JSON/],
    ['{"a": 1,}', /not valid JSON/],
    ['{"a": 1, "a": 2}', /not valid JSON \(Duplicate key/],
    ['{"hmac_sig": "x"}', /"hmac_sig" is reserved/],
    ['{"dispatch_token": "x"}', /"dispatch_token" is reserved/],
    ['{"attempt_id": 3}', /"attempt_id" is reserved/],
    ['{"x": 1e400}', /overflows a double/],
  ])('refuses %s with a one-line UsageError', (text, message) => {
    let caught: unknown;
    try {
      parseUserData(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(UsageError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message).not.toContain('\n');
  });

  it('allows reserved names below the top level', () => {
    expect(parseUserData('{"nested": {"hmac_sig": 1}}')).toEqual({ nested: { hmac_sig: new LosslessNumber('1') } });
  });

  it('allows exactly MAX_DATA_BYTES as sent, and measures escapes, not input whitespace', () => {
    const fill = (n: number) => `{"x":"${'a'.repeat(n - 8)}"}`;
    expect(fill(MAX_DATA_BYTES)).toHaveLength(MAX_DATA_BYTES);
    expect(() => parseUserData(fill(MAX_DATA_BYTES))).not.toThrow();
    expect(() => parseUserData(fill(MAX_DATA_BYTES + 1))).toThrow(/over the limit of 65536/);
    expect(() => parseUserData(`{"x":"${'é'.repeat(12_000)}"}`)).toThrow(UsageError); // 72 KB once escaped
    expect(() => parseUserData(`{${' '.repeat(100_000)}"x":1}`)).not.toThrow();
    expect(() => parseUserData(' '.repeat(4 * MAX_DATA_BYTES + 1))).toThrow(/larger than/);
  });
});
