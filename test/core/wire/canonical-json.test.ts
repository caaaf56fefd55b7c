import fc from 'fast-check';
import { LosslessNumber } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  compareCodePoints,
  MAX_JSON_DEPTH,
  normalizeForSigning,
  parseWireJson,
  pythonNumber,
  wireJson,
} from '../../../src/core/wire/canonical-json.ts';
import { WireEncodeError, WireParseError } from '../../../src/core/wire/wire-errors.ts';
import { jsonValue } from './arbitraries.ts';

const ln = (lexeme: string) => new LosslessNumber(lexeme);

describe('pythonNumber', () => {
  it.each([
    ['1', '1'],
    ['-0', '0'],
    ['10000000000000000', '10000000000000000'],
    ['123456789012345678901234567890', '123456789012345678901234567890'],
    ['1.0', '1.0'],
    ['1E5', '100000.0'],
    ['1e-7', '1e-07'],
    ['0.00001', '1e-05'],
    ['0.0001', '0.0001'],
    ['1e16', '1e+16'],
    ['9999999999999998.0', '9999999999999998.0'],
    ['1.5e300', '1.5e+300'],
    ['-0.0', '-0.0'],
    ['0e0', '0.0'],
    ['5e-324', '5e-324'],
    ['1e-400', '0.0'],
    ['0.30000000000000004', '0.30000000000000004'],
    ['123456789012345678.0', '1.2345678901234568e+17'],
  ])('spells the lexeme %s as Python writes it: %s', (lexeme, expected) => {
    expect(pythonNumber(lexeme)).toBe(expected);
    expect(pythonNumber(ln(lexeme))).toBe(expected);
  });

  it('writes safe integer JS numbers as ints and every other number as a float', () => {
    expect(pythonNumber(3)).toBe('3');
    expect(pythonNumber(-0)).toBe('0');
    expect(pythonNumber(0.5)).toBe('0.5');
    expect(pythonNumber(1e-7)).toBe('1e-07');
    expect(pythonNumber(2 ** 53)).toBe('9007199254740992.0');
    expect(pythonNumber(1e300)).toBe('1e+300');
    expect(pythonNumber(12n ** 30n)).toBe((12n ** 30n).toString());
  });

  it('refuses what has no JSON spelling', () => {
    for (const bad of [Infinity, -Infinity, NaN, '1e400', '-1e400', 'abc', '01', '1.', '+1', '']) {
      expect(() => pythonNumber(bad)).toThrow(WireEncodeError);
    }
  });

  it('refuses integers Python 3.11 could not read (over 4300 digits)', () => {
    expect(pythonNumber('9'.repeat(4300))).toHaveLength(4300);
    expect(() => pythonNumber('9'.repeat(4301))).toThrow(/limit of 4300/);
    expect(pythonNumber(`-${'9'.repeat(4300)}`)).toHaveLength(4301);
  });

  it('is idempotent: a Python spelling re-spells to itself', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.bigInt()), (n) => {
        const once = pythonNumber(n);
        expect(pythonNumber(once)).toBe(once);
      }),
    );
  });
});

describe('canonicalJson', () => {
  it('sorts keys by code point at every depth, not by UTF-16 unit', () => {
    const value = { '\u{1f600}': 1, '\ue000': 2, b: { z: 1, a: [{ y: 1, x: 2 }] }, B: 3, _: 4 };
    expect(canonicalJson(value)).toBe('{"B":3,"_":4,"b":{"a":[{"x":2,"y":1}],"z":1},"\\ue000":2,"\\ud83d\\ude00":1}');
    expect(compareCodePoints('\ue000', '\u{1f600}')).toBeLessThan(0);
    expect(compareCodePoints('a', 'aa')).toBeLessThan(0);
    expect(compareCodePoints('\ud800', '\ue000')).toBeLessThan(0); // a lone surrogate is its own code point
  });

  it('escapes like ensure_ascii: short escapes, \\u00XX controls, lowercase hex, "/" left alone', () => {
    const s = 'é—"\\/\b\f\n\r\t\u0001\u001f\u007f\u2028😀';
    expect(canonicalJson(s)).toBe('"\\u00e9\\u2014\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\\u2028\\ud83d\\ude00"');
  });

  it('writes LosslessNumber lexemes as they stand and JS numbers as Python does', () => {
    expect(canonicalJson({ a: ln('1.0'), b: ln('1E5'), c: 1e-7, d: 2, e: ln('-0') })).toBe('{"a":1.0,"b":1E5,"c":1e-07,"d":2,"e":-0}');
  });

  it('leaves out undefined members and refuses what JSON cannot hold', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    for (const bad of [[undefined], new Date(0), new Map(), () => 1, Symbol('x'), { n: NaN }]) {
      expect(() => canonicalJson(bad)).toThrow(WireEncodeError);
    }
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => canonicalJson(cycle)).toThrow(WireEncodeError);
  });

  it('keeps a "__proto__" key as a key', () => {
    const value = parseWireJson('{"__proto__":{"x":1},"a":2}');
    expect(canonicalJson(value)).toBe('{"__proto__":{"x":1},"a":2}');
    expect(canonicalJson(normalizeForSigning(value))).toBe('{"__proto__":{"x":1},"a":2}');
  });
});

describe('wireJson', () => {
  it('keeps insertion order, compact and ASCII only', () => {
    expect(wireJson({ z: 1, a: 'é', m: [1.5, null, true] })).toBe('{"z":1,"a":"\\u00e9","m":[1.5,null,true]}');
  });

  it('round-trips through parseWireJson to the same canonical form', () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const text = wireJson(value);
        expect(text).toMatch(/^[\x20-\x7e]*$/);
        expect(canonicalJson(parseWireJson(text))).toBe(canonicalJson(value));
      }),
    );
  });
});

describe('parseWireJson', () => {
  it('keeps numbers as lexemes', () => {
    const parsed = parseWireJson('{"a": 1.0, "b": [1e-07, 10000000000000000000001]}') as Record<string, unknown>;
    expect(parsed.a).toEqual(ln('1.0'));
    expect(canonicalJson(parsed)).toBe('{"a":1.0,"b":[1e-07,10000000000000000000001]}');
  });

  it('reads bytes as strict UTF-8', () => {
    expect(parseWireJson(Buffer.from('{"d":"café"}'))).toEqual({ d: 'café' });
    expect(() => parseWireJson(Uint8Array.from([0x7b, 0xff, 0x7d]))).toThrow(WireParseError);
  });

  it('refuses duplicate keys, NaN, trailing garbage, raw control characters and deep nesting', () => {
    for (const bad of ['{"a":1,"a":2}', '{"a":NaN}', '{} x', '"a\u0001"', '', '[1,]', `${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`]) {
      expect(() => parseWireJson(bad)).toThrow(WireParseError);
    }
    const deep = `${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`;
    expect(() => canonicalJson(parseWireJson(deep))).not.toThrow();
  });

  it('never throws anything but WireParseError, whatever the input', () => {
    const jsonish = fc.string({ unit: fc.constantFrom('{', '}', '[', ']', '"', '\\', ':', ',', '1', 'e', '-', '.', 'a', ' ', 'n', 'u') });
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), jsonish, fc.uint8Array()), (input) => {
        try {
          parseWireJson(input);
        } catch (err) {
          expect(err).toBeInstanceOf(WireParseError);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('normalizeForSigning', () => {
  it('turns every number into a LosslessNumber with Python spelling, deep', () => {
    const out = normalizeForSigning({ a: 1, b: [0.5, ln('1E5')], c: { d: 10n ** 20n, e: 'x' } });
    expect(out).toEqual({ a: ln('1'), b: [ln('0.5'), ln('100000.0')], c: { d: ln('100000000000000000000'), e: 'x' } });
  });

  it('keeps JS numbers when asked, re-spelling only lexemes', () => {
    expect(normalizeForSigning({ seq: 3, x: ln('1e-7') }, { keepJsNumbers: true })).toEqual({ seq: 3, x: ln('1e-07') });
    expect(() => normalizeForSigning({ x: NaN }, { keepJsNumbers: true })).toThrow(WireEncodeError);
  });

  it('changes no spelling of a value it already normalized', () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const once = normalizeForSigning(value);
        expect(wireJson(normalizeForSigning(once))).toBe(wireJson(once));
      }),
    );
  });
});
