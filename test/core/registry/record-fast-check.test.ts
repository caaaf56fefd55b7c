import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkRecordFast, jobRecordSchema } from '../../../src/core/registry/job-record.ts';

// checkRecordFast stands in for zod when a record is read (issue 17: zod's first hundred calls in a
// cold process cost ~120–200 µs a record). It may only ever say what zod says: a record it takes is
// one zod accepts, and what it returns is zod's result to the key order; anything else is zod's to
// refuse. Records come from JSON files, so the inputs here are what JSON.parse can give.

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
const iso = fc.date({ min: new Date(0), max: new Date(Date.UTC(9999, 0)), noInvalidDate: true }).map((d) => d.toISOString());

const validRecord = fc.record({
  job_id: hex(8),
  status: fc.constantFrom('pending', 'running', 'completed', 'error', 'cancelled'),
  created_at: iso,
  updated_at: iso,
  agent_session: fc.option(fc.string(), { nil: null }),
  brief: fc.string(),
  last_seq: fc.nat(),
  auth_token: fc.string({ minLength: 16, maxLength: 48 }),
  dispatch_token: hex(32),
  attempt_id: fc.integer({ min: 1 }),
  transition_seq: fc.nat(),
  heartbeat_sec: fc.double({ min: Number.MIN_VALUE, max: 1e9, noNaN: true }),
  heartbeat_misses: fc.integer({ min: 1, max: 100 }),
  ack_timeout_sec: fc.constantFrom(0.5, 180, 1e6),
  idle_timeout_sec: fc.constantFrom(1, 120),
  timeout_sec: fc.constantFrom(3600, 0.25),
  transport: fc.constantFrom('herdr', 'remote'),
  depends_on: fc.array(hex(8), { maxLength: 3 }),
  detail: fc.option(fc.string(), { nil: null }),
  registered_session: fc.option(fc.option(fc.string(), { nil: null }), { nil: undefined }),
  to: fc.option(fc.option(fc.string(), { nil: null }), { nil: undefined }),
  broker: fc.option(fc.record({ host: fc.string({ minLength: 1 }), port: fc.integer({ min: 1, max: 65535 }) }), { nil: undefined, freq: 4 }),
});

// Values that sit on or just past a field's edge, besides any JSON value.
const edgy = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(0, -0, 1, -1, 0.5, 15, 16, 2 ** 53 - 1, 2 ** 53, 1e308, -1e308, Number.MIN_VALUE, '', 'x'.repeat(15), 'x'.repeat(16)),
  fc.constantFrom(
    '2026-01-01T00:00:00.000Z',
    '2026-01-01T00:00:00Z',
    '2026-01-01T00:00:00.000+00:00',
    'ABCDEF12',
    'abcdef12',
    'abcdef1',
    'a'.repeat(32),
    'A'.repeat(32),
  ),
  fc.constantFrom([], ['abcdef12'], ['abcdef12', 7], {}, null, true),
);

/** A record as JSON.parse gives it: some fields replaced, removed or added, keys in any order. */
const recordish = fc
  .tuple(
    validRecord,
    fc.array(fc.tuple(fc.constantFrom(...Object.keys(jobRecordSchema.def.shape), '__proto__', 'extra', 'x_y'), fc.option(edgy, { nil: undefined })), {
      maxLength: 3,
    }),
    fc.boolean(),
  )
  .map(([rec, changes, shuffle]) => {
    const r: Record<string, unknown> = { ...rec };
    for (const [key, value] of changes) {
      if (value === undefined) delete r[key];
      else r[key] = value;
    }
    const entries = Object.entries(r).filter(([, v]) => v !== undefined);
    if (shuffle) entries.reverse();
    // Through JSON text, as records are read (this also makes `__proto__` an own key).
    return JSON.parse(`{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`) as unknown;
  });

describe('checkRecordFast: the hand check of a record against zod', () => {
  it('takes exactly what zod accepts, bar the two cases it leaves to zod, and returns what zod returns', () => {
    fc.assert(
      fc.property(recordish, (raw) => {
        const fast = checkRecordFast(raw);
        const slow = jobRecordSchema.safeParse(raw);
        const leftToZod = Object.hasOwn(raw as object, 'broker') || Object.hasOwn(raw as object, '__proto__');
        // The fast path is only worth having if it takes every record zod accepts (but those two):
        // asserted record by record, so the test does not hang on the share a generator happens to make.
        if (slow.success && !leftToZod) expect(fast).toBeDefined();
        if (fast === undefined) return;
        expect(slow.success).toBe(true);
        expect(Object.keys(fast)).toEqual(Object.keys(slow.data!));
        expect(JSON.stringify(fast)).toBe(JSON.stringify(slow.data));
        expect(fast.depends_on).not.toBe((raw as { depends_on: unknown }).depends_on);
      }),
      // Seeded, so a failure is reproduced by the next run; numRuns keeps edge values (edgy) frequent.
      { numRuns: 5_000, seed: 20261205 },
    );
  });

  it('takes every valid record without a broker block', () => {
    fc.assert(
      fc.property(validRecord, (rec) => {
        const { broker: _broker, ...withoutBroker } = rec;
        const raw = JSON.parse(JSON.stringify(withoutBroker)) as unknown; // undefined fields dropped, as on disk
        expect(checkRecordFast(raw)).toEqual(jobRecordSchema.parse(raw));
      }),
      { numRuns: 1_000, seed: 20261205 },
    );
  });

  it.each([
    ['a broker block', { broker: { host: 'h' } }],
    ['a __proto__ key', JSON.parse('{"__proto__":{"x":1}}')],
    ['a seq past 2^53', { last_seq: 2 ** 53 }],
    ['an infinite timeout', { timeout_sec: Number.POSITIVE_INFINITY }],
    ['a timestamp without milliseconds', { created_at: '2026-01-01T00:00:00Z' }],
  ])('leaves a record with %s to zod', (_what, change) => {
    const base = fc.sample(validRecord, { numRuns: 1, seed: 7 })[0]!;
    const { broker: _broker, ...rec } = base;
    expect(checkRecordFast({ ...rec, ...change })).toBeUndefined();
  });
});
