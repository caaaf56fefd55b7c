import fc from 'fast-check';
import { LosslessNumber, isLosslessNumber, parse as losslessParse, stringify as losslessStringify } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  canonicalJsonWithout,
  compareCodePoints,
  isPlainObject,
  MAX_JSON_DEPTH,
  parseWireJson,
  parseWirePayload,
  pythonNumber,
  wireJson,
} from '../../../src/core/wire/canonical-json.ts';
import { buildEventPayload, buildStatePayload, checkPayloadFast, eventPayloadSchema, statePayloadSchema } from '../../../src/core/wire/payloads.ts';
import { computeHmac, signPayload, verifyPayload } from '../../../src/core/wire/signature.ts';
import { WireParseError } from '../../../src/core/wire/wire-errors.ts';
import { eventArgs, jsonValue, token, unicodeString } from './arbitraries.ts';

// The monitor's fast paths (issue 17) must give exactly what the slow paths give: JSON.parse in
// place of lossless-json, the wire text in place of wireJson, a hand check in place of zod, the
// canonical writer without a copy of the payload. Each is checked here against the slow one.

/** Everything a reader of a parsed value can see: types, key order, prototypes, number lexemes. */
function shape(value: unknown): string {
  if (isLosslessNumber(value)) return `N(${value.value})`;
  if (Array.isArray(value)) return `[${value.map(shape).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const proto = Object.getPrototypeOf(value) === Object.prototype ? '' : '!proto';
    return `{${proto}${Object.keys(value)
      .map((k) => `${JSON.stringify(k)}:${shape((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return `${typeof value}:${JSON.stringify(value)}`;
}

/** lossless-json alone (the slow path): its result, or its error message. */
function slowParse(text: string): { shape: string } | { error: string } {
  try {
    return { shape: shape(losslessParse(text)) };
  } catch (err) {
    return { error: new WireParseError((err as Error).message).message };
  }
}

function fastParse(text: string): { shape: string } | { error: string } {
  try {
    return { shape: shape(parseWireJson(text)) };
  } catch (err) {
    expect(err).toBeInstanceOf(WireParseError);
    return { error: (err as Error).message };
  }
}

const TRICKY = [
  // numbers that JSON.parse would lose or respell
  '{"a":1.0}',
  '{"a":1e400}',
  '{"a":-1e400}',
  '{"a":-0}',
  '{"a":-0.0}',
  '{"a":0}',
  '{"a":1E5}',
  '{"a":1e5}',
  '{"a":1e+21}',
  '{"a":1e21}',
  '{"a":1e-7}',
  '{"a":1e-07}',
  '{"a":0.1}',
  '{"a":0.30000000000000004}',
  '{"a":5e-324}',
  '{"a":1e-400}',
  '{"a":9007199254740991}',
  '{"a":9007199254740993}',
  '{"a":123456789012345678901234567890}',
  '{"a":-123456789012345678901234567890.5}',
  `{"a":${'9'.repeat(400)}}`,
  '1.0',
  '12',
  '-0',
  '[1.0,2,3.5,-0,1e400]',
  // strings: escapes, unicode raw and escaped, lone surrogates
  '{"s":"a\\u00e9\\n\\"\\\\\\/\\b\\f\\r\\t"}',
  '{"s":"caf\u00e9 \u{1f600} \u2028"}',
  '{"s":"\\ud800"}',
  '{"s":"\\udc00\\ud800"}',
  '{"\\u00e9":1,"e":2}',
  '{"a":"\\\\","b":"x\\"y","c":"\\\\\\"","d":1.0}',
  '["\\\\\\\\",-0]',
  '"just a string"',
  'true',
  'null',
  // keys: order, array indices, __proto__, duplicates
  '{"b":1,"a":2,"1":3,"0":4,"-1":5,"01":6}',
  '{"__proto__":{"x":1},"a":2}',
  '{"__proto__":1}',
  '{"a":1,"a":1}',
  '{"a":1,"a":2}',
  '{"a":1.0,"a":1}',
  '{"a":{"x":[1]},"a":{"x":[1]}}',
  '{"__proto__":1,"__proto__":1}',
  // whitespace, nesting, structure
  ' { "a" : [ 1 , { "b" : null } ] , "c" : true } ',
  '{"a":[],"b":{},"c":[[]],"d":[{}]}',
  `${'['.repeat(MAX_JSON_DEPTH)}1${']'.repeat(MAX_JSON_DEPTH)}`,
  // invalid: both must refuse, with the same words
  '',
  ' ',
  '{',
  '{"a":1,}',
  '[1,]',
  '{"a" 1}',
  '{"a":01}',
  '{"a":1.}',
  '{"a":.5}',
  '{"a":+1}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":"\u0001"}',
  '{"a":"\\x"}',
  '{"a":"\\u12"}',
  '{"a":1} x',
  '{} {}',
  'tru',
  'truex',
  "{'a':1}",
  '{"a":1e}',
  '{"a":-}',
  '\ufeff{}',
  '{"a":1}\u00a0',
];

describe('parseWireJson: the JSON.parse fast path', () => {
  it.each(TRICKY)('gives what lossless-json gives for %j', (text) => {
    expect(fastParse(text)).toEqual(slowParse(text));
  });

  it('gives what lossless-json gives for any JSON we write, compact or spaced', () => {
    let fast = 0;
    fc.assert(
      fc.property(jsonValue, fc.constantFrom(0, 1, 2), (value, spaced) => {
        const compact = wireJson(value);
        const text = spaced === 0 ? compact : spaced === 1 ? String(losslessStringify(losslessParse(compact), null, 1)) : compact.replace(/,/g, ', ');
        expect(fastParse(text)).toEqual(slowParse(text));
        if (parseWirePayload(text).compactText !== undefined) fast++;
      }),
      { numRuns: 2000 },
    );
    // The comparison means something only if the fast path ran (a compact text is read by it alone).
    expect(fast).toBeGreaterThan(200);
  });

  it('gives what lossless-json gives on JSON-ish noise (same value, or the same refusal)', () => {
    const jsonish = fc.string({
      unit: fc.constantFrom('{', '}', '[', ']', '"', '\\', ':', ',', '0', '1', '9', 'e', 'E', '-', '+', '.', 'a', ' ', 'n', 'u', 'l', 't', 'r'),
      maxLength: 30,
    });
    fc.assert(
      fc.property(jsonish, (text) => {
        expect(fastParse(text)).toEqual(slowParse(text));
      }),
      { numRuns: 20_000 },
    );
  });

  it('gives what lossless-json gives on mutated payloads (keys, numbers, escapes spliced in)', () => {
    const piece = fc.constantFrom(' ', '1.0', '-0', '1e400', '"1":2,', '"a":1,', '\\u00e9', '\u00e9', '"__proto__":0,', '{', '}', ',', '"');
    fc.assert(
      fc.property(jsonValue, fc.nat(), piece, (value, at, insert) => {
        const base = wireJson({ a: value, b: [value], c: 'x' });
        const i = at % (base.length + 1);
        const text = `${base.slice(0, i)}${insert}${base.slice(i)}`;
        expect(fastParse(text)).toEqual(slowParse(text));
      }),
      { numRuns: 10_000 },
    );
  });

  it('refuses deep nesting before either parser runs, as before', () => {
    const deep = `${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`;
    expect(() => parseWireJson(deep)).toThrow(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    // Brackets inside strings do not count, after an escaped quote either; a string that ends in an escaped backslash ends there.
    expect(() => parseWireJson(`{"a":"${'['.repeat(MAX_JSON_DEPTH + 1)}"}`)).not.toThrow();
    expect(() => parseWireJson(`{"a":"\\"${'['.repeat(MAX_JSON_DEPTH + 1)}"}`)).not.toThrow();
    expect(() => parseWireJson(`["\\\\",${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}]`)).toThrow(`nested deeper than ${MAX_JSON_DEPTH} levels`);
  });
});

describe('parseWirePayload: the compact text', () => {
  it('is the text exactly when wireJson would write it back byte for byte', () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const text = wireJson(value);
        const read = parseWirePayload(text);
        if (read.compactText !== undefined) expect(read.compactText).toBe(text);
        expect(wireJson(read.value)).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });

  it('is never given for a text that wireJson writes otherwise', () => {
    const variants = (compact: string) => [compact, compact.replace(/,/g, ', '), compact.replace(/:/g, ': '), ` ${compact}`, `${compact}\n`];
    fc.assert(
      fc.property(jsonValue, (value) => {
        for (const text of variants(wireJson(value))) {
          let read: ReturnType<typeof parseWirePayload>;
          try {
            read = parseWirePayload(text);
          } catch {
            continue;
          }
          if (read.compactText !== undefined) expect(wireJson(read.value)).toBe(text);
        }
      }),
      { numRuns: 2000 },
    );
    // wireJson writes these otherwise: never given.
    for (const text of ['{"a":"caf\u00e9"}', '{"a":"\\/"}', '{"b":1,"1":2}', '{"a":1,"a":1}', '{"a": 1}', '[1, 2]']) {
      expect(wireJson(parseWireJson(text))).not.toBe(text);
      expect(parseWirePayload(text).compactText).toBeUndefined();
    }
    // wireJson writes these back as they are, but escapes and array-index keys are left to it (conservative).
    for (const text of ['{"a":"\\u00e9"}', '{"a":"\\""}', '{"0":1}']) {
      expect(wireJson(parseWireJson(text))).toBe(text);
      expect(parseWirePayload(text).compactText).toBeUndefined();
    }
    // Lexemes are kept, so a float stays what it was.
    for (const text of ['{"a":1.0,"b":[true,null,-0,1E5],"c":{}}', '{"a":1e400,"b":123456789012345678901234567890}', '-0.0']) {
      expect(parseWirePayload(text).compactText).toBe(text);
      expect(wireJson(parseWireJson(text))).toBe(text);
    }
  });

  it('is given for what a MAM sender writes, and for a Python sender only once it is compact ASCII', () => {
    const signed = signPayload(
      buildEventPayload({
        jobId: '918b0612',
        seq: 7,
        event: 'progress',
        detail: 'step 7',
        dispatchToken: 'a'.repeat(32),
        attemptId: 1,
        data: { ratio: 0.5, n: 1e-7 },
      }),
      'key',
    );
    const text = wireJson(signed);
    expect(parseWirePayload(text).compactText).toBe(text);
    expect(parseWirePayload(Buffer.from(text)).compactText).toBe(text);
    expect(parseWirePayload(text.replace(/,/g, ', ')).compactText).toBeUndefined();
  });
});

// The writers before issue 17, kept as the reference: arrays of members joined, sort by compareCodePoints.
function referenceWrite(value: unknown, sortKeys: boolean): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') return referenceQuote(value);
  if (typeof value === 'number' || typeof value === 'bigint') return pythonNumber(value);
  if (isLosslessNumber(value)) return value.value;
  if (Array.isArray(value)) return `[${value.map((v: unknown) => referenceWrite(v, sortKeys)).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined);
  if (sortKeys) keys.sort(compareCodePoints);
  return `{${keys.map((k) => `${referenceQuote(k)}:${referenceWrite(obj[k], sortKeys)}`).join(',')}}`;
}
const SHORT: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const referenceQuote = (s: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the reference escaper.
  `"${s.replace(/["\\\u0000-\u001f\u007f-\uffff]/g, (ch) => SHORT[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;

/** Many keys, some that tell code-point order from UTF-16 order: past the insertion sort's bound too. */
const manyKeys = fc.dictionary(fc.oneof(unicodeString, fc.constantFrom('\ue000', '\u{1f600}', '\ud800', 'a', 'B', '10', '__proto__')), jsonValue, {
  maxKeys: 40,
  noNullPrototype: true,
});

describe('canonicalJson and wireJson: the writers', () => {
  it('write what the writers before issue 17 wrote', () => {
    fc.assert(
      fc.property(fc.oneof(jsonValue, manyKeys), (value) => {
        expect(canonicalJson(value)).toBe(referenceWrite(value, true));
        expect(wireJson(value)).toBe(referenceWrite(value, false));
      }),
      { numRuns: 3000 },
    );
  });

  it('sort keys by code point, with and without surrogates, few and many', () => {
    const keys = ['b', 'a', '\ue000', '\u{1f600}', 'B', '_', 'aa', ''];
    const value = Object.fromEntries(keys.map((k, i) => [k, i]));
    expect(canonicalJson(value)).toBe(referenceWrite(value, true));
    const plain = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${(i * 7) % 40}`, i]));
    expect(canonicalJson(plain)).toBe(referenceWrite(plain, true));
  });
});

describe('canonicalJsonWithout', () => {
  const withoutSig = (p: Record<string, unknown>) => {
    const { hmac_sig: _, ...data } = p.data as Record<string, unknown>;
    return { ...p, data };
  };

  it('is canonicalJson of a copy without data.hmac_sig', () => {
    fc.assert(
      fc.property(manyKeys, manyKeys, fc.option(fc.string()), (top, data, sig) => {
        const payload = { ...top, data: sig === null ? data : { ...data, hmac_sig: sig } };
        expect(canonicalJsonWithout(payload, 'data', 'hmac_sig')).toBe(canonicalJson(withoutSig(payload)));
      }),
      { numRuns: 2000 },
    );
    const parsed = parseWireJson('{"data":{"__proto__":1,"hmac_sig":"x","b":[1.0]},"__proto__":{"data":2}}') as Record<string, unknown>;
    expect(canonicalJsonWithout(parsed, 'data', 'hmac_sig')).toBe(canonicalJson(withoutSig(parsed)));
  });

  it('leaves a data that is no object as it is', () => {
    expect(canonicalJsonWithout({ data: [1], b: 2 }, 'data', 'hmac_sig')).toBe('{"b":2,"data":[1]}');
  });
});

describe('verifyPayload', () => {
  it('agrees with computeHmac over a copy without the signature', () => {
    fc.assert(
      fc.property(eventArgs, token, fc.boolean(), (args, key, tamper) => {
        const signed = signPayload(buildEventPayload(args), key);
        const parsed = parseWireJson(wireJson(signed)) as Record<string, unknown> & { data: Record<string, unknown> };
        if (tamper) parsed.detail = `${String(parsed.detail)}!`;
        const { hmac_sig: sig, ...data } = parsed.data;
        expect(verifyPayload(parsed, key)).toBe(computeHmac({ ...parsed, data }, key) === sig);
        expect(verifyPayload(parsed, key)).toBe(!tamper);
      }),
      { numRuns: 500 },
    );
  });
});

describe('checkPayloadFast', () => {
  const eventPayload = () =>
    parseWireJson(
      wireJson(
        signPayload(
          buildEventPayload({ jobId: '918b0612', seq: 2, event: 'progress', detail: 'd', dispatchToken: 'a'.repeat(32), attemptId: 1, data: { x: 1.5 } }),
          'k',
        ),
      ),
    ) as Record<string, unknown>;
  const statePayload = () =>
    parseWireJson(
      wireJson(
        signPayload(
          buildStatePayload({
            jobId: '918b0612',
            seq: 3,
            status: 'running',
            lastEvent: 'progress',
            detail: 'd',
            dispatchToken: 'a'.repeat(32),
            attemptId: 2,
          }),
          'k',
        ),
      ),
    ) as Record<string, unknown>;

  const fieldsOf = (p: Record<string, unknown>) => ({
    seq: p.seq,
    job_id: p.job_id,
    event: p.event,
    ...(p.event === 'state' ? { status: p.status, last_event: p.last_event } : {}),
    data: { attempt_id: (p.data as Record<string, unknown>).attempt_id, dispatch_token: (p.data as Record<string, unknown>).dispatch_token },
  });

  /** What may stand in any field: right and wrong types, lexemes zod reads differently, names of the other kind. */
  const oddValue = fc.oneof(
    fc.constantFrom(
      ...['1', '0', '-1', '1.0', '1e0', '2', '999999999999999', '1000000000000000', '9007199254740991', '9007199254740993', '-0'].map(
        (v) => new LosslessNumber(v),
      ),
      1,
      0,
      2.5,
      '1',
      '',
      null,
      true,
      [],
      {},
      { isLosslessNumber: true, value: '1' },
      '918b0612',
      '918B0612',
      'progress',
      'state',
      'running',
      'bogus',
      'a'.repeat(64),
      'A'.repeat(64),
      '2026-06-20T14:48:58Z',
      '2026-06-20 14:48:58',
      undefined,
    ),
    jsonValue,
  );
  const topKeys = ['schema_version', 'seq', 'job_id', 'event', 'timestamp', 'detail', 'data', 'status', 'last_event', 'extra'];
  const dataKeys = ['hmac_sig', 'dispatch_token', 'attempt_id', 'extra'];
  const mutation = fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 9 }), oddValue, fc.boolean()), { maxLength: 3 });

  it('accepts only what zod accepts, with the same fields', () => {
    const seen = { fast: 0, zodOnly: 0, neither: 0 };
    fc.assert(
      fc.property(fc.boolean(), mutation, (isState, edits) => {
        const p = isState ? statePayload() : eventPayload();
        for (const [inData, k, v, remove] of edits) {
          const target = inData && isPlainObject(p.data) ? (p.data as Record<string, unknown>) : p;
          const key = inData ? dataKeys[k % dataKeys.length]! : topKeys[k]!;
          if (remove) delete target[key];
          else target[key] = v;
        }
        for (const kind of ['events', 'state'] as const) {
          const fast = checkPayloadFast(p, kind);
          const zod = (kind === 'events' ? eventPayloadSchema : statePayloadSchema).safeParse(p);
          if (fast !== undefined) {
            expect(zod.success).toBe(true);
            if (zod.success) expect(fast).toEqual(fieldsOf(zod.data as Record<string, unknown>));
            seen.fast++;
          } else if (zod.success) seen.zodOnly++;
          else seen.neither++;
        }
      }),
      { numRuns: 20_000 },
    );
    // Both sides of the check ran many times; zod alone accepts only what the hand check leaves to it.
    expect(seen.fast).toBeGreaterThan(1000);
    expect(seen.neither).toBeGreaterThan(1000);
  });

  it('takes the payloads senders write (no zod for them), events and states', () => {
    expect(checkPayloadFast(eventPayload(), 'events')).toEqual({
      seq: 2,
      job_id: '918b0612',
      event: 'progress',
      data: { attempt_id: 1, dispatch_token: 'a'.repeat(32) },
    });
    expect(checkPayloadFast(statePayload(), 'state')).toEqual({
      seq: 3,
      job_id: '918b0612',
      event: 'state',
      status: 'running',
      last_event: 'progress',
      data: { attempt_id: 2, dispatch_token: 'a'.repeat(32) },
    });
    expect(checkPayloadFast(eventPayload(), 'state')).toBeUndefined();
    expect(checkPayloadFast(statePayload(), 'events')).toBeUndefined();
  });
});
