import fc from 'fast-check';
import { LosslessNumber } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { canonicalJson, parseWireJson, wireJson } from '../../../src/core/wire/canonical-json.ts';
import { buildEventPayload } from '../../../src/core/wire/payloads.ts';
import { computeHmac, signPayload, verifyPayload } from '../../../src/core/wire/signature.ts';
import { WireEncodeError } from '../../../src/core/wire/wire-errors.ts';
import { eventArgs, jsonValue, token } from './arbitraries.ts';

type Wire = { seq: LosslessNumber; detail: string; data: Record<string, unknown> };

/** Each mutation makes a payload that means something else, so its old signature must fail. */
const mutations: Record<string, (p: Wire) => void> = {
  'change a char of detail': (p) => {
    const i = Math.floor(p.detail.length / 2);
    p.detail = p.detail === '' ? 'x' : `${p.detail.slice(0, i)}${p.detail[i] === 'x' ? 'y' : 'x'}${p.detail.slice(i + 1)}`;
  },
  'bump seq': (p) => {
    p.seq = new LosslessNumber(String(BigInt(p.seq.value) + 1n));
  },
  'add a data key': (p) => {
    p.data['\u0000added'] = 1;
  },
  'remove a data key': (p) => {
    delete p.data.dispatch_token;
  },
  'change a nested value': (p) => {
    const probe = p.data.probe as { inner: unknown[] };
    probe.inner[0] = probe.inner[0] === 'x' ? 'y' : 'x';
  },
  'respell a number (1 → 1.0)': (p) => {
    p.data.attempt_id = new LosslessNumber(`${(p.data.attempt_id as LosslessNumber).value}.0`);
  },
};

const signedArgs = fc.record({ args: eventArgs, probe: jsonValue, token });
type SignedInput = typeof signedArgs extends fc.Arbitrary<infer T> ? T : never;

function signedWire({ args, probe, token: key }: SignedInput): string {
  const payload = buildEventPayload({ ...args, data: { ...args.data, probe: { inner: [probe] } } });
  return wireJson(signPayload(payload, key));
}

describe('signPayload / verifyPayload', () => {
  it('a signed payload verifies, as built and after the wire', () => {
    fc.assert(
      fc.property(eventArgs, token, (args, key) => {
        const signed = signPayload(buildEventPayload(args), key);
        expect(signed.data.hmac_sig).toMatch(/^[0-9a-f]{64}$/);
        expect(verifyPayload(signed, key)).toBe(true);
        const text = wireJson(signed);
        expect(verifyPayload(parseWireJson(text), key)).toBe(true);
        expect(verifyPayload(parseWireJson(Buffer.from(text)), `${key}x`)).toBe(false);
      }),
    );
  });

  it('receivers accept any key order and spacing', () => {
    fc.assert(
      fc.property(signedArgs, (input) => {
        const respaced = loosen(wireJson(reverseKeys(parseWireJson(signedWire(input)))));
        expect(verifyPayload(parseWireJson(respaced), input.token)).toBe(true);
      }),
    );
  });

  it.each(Object.keys(mutations))('any single change fails verification: %s', (name) => {
    const mutate = mutations[name]!;
    fc.assert(
      fc.property(signedArgs, (input) => {
        const parsed = parseWireJson(signedWire(input)) as Wire;
        mutate(parsed);
        expect(verifyPayload(parsed, input.token)).toBe(false);
      }),
      { numRuns: 60 },
    );
  });

  it('re-spells numbers in the copy it returns, so wire and signature agree', () => {
    const payload = buildEventPayload({
      jobId: '918b0612',
      seq: 5,
      event: 'progress',
      detail: 'd',
      data: { ratio: new LosslessNumber('1E0'), tiny: 1e-7 },
      dispatchToken: 'a'.repeat(32),
      attemptId: 1,
      now: new Date('2026-06-20T14:48:58.999Z'),
    });
    const signed = signPayload(payload, 'k');
    expect(signed.seq).toBe(5);
    expect(wireJson(signed)).toContain('"data":{"dispatch_token":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","attempt_id":1,"ratio":1.0,"tiny":1e-07,"hmac_sig":');
    expect(payload.data).not.toHaveProperty('hmac_sig'); // the input is left alone
  });

  it('replaces an existing signature instead of signing it', () => {
    const payload = { data: { a: 1, hmac_sig: 'f'.repeat(64) } };
    const signed = signPayload(payload, 'k');
    expect(signed.data.hmac_sig).toBe(computeHmac({ data: { a: 1 } }, 'k'));
  });

  it('computeHmac takes the key as text or bytes', () => {
    expect(computeHmac({ a: 1 }, 'key')).toBe(computeHmac({ a: 1 }, Buffer.from('key')));
    expect(computeHmac({ b: 1, a: 2 }, 'key')).toBe(computeHmac({ a: 2, b: 1 }, 'key'));
  });

  it('refuses to sign with an empty key or without a data object', () => {
    expect(() => signPayload({ data: {} }, '')).toThrow(WireEncodeError);
    expect(() => signPayload({ data: [] as unknown as object }, 'k')).toThrow(WireEncodeError);
    expect(() => signPayload({ data: { x: Infinity } }, 'k')).toThrow(WireEncodeError);
  });

  it('verifyPayload is false, never a throw, for anything malformed', () => {
    const good = signPayload({ data: { a: 1 } }, 'k');
    const sig = good.data.hmac_sig;
    const deep: unknown[] = [];
    let cursor = deep;
    for (let i = 0; i < 1000; i++) cursor = (cursor[0] = []) as unknown[];
    const cases: unknown[] = [
      null,
      'x',
      [],
      {},
      { data: null },
      { data: {} },
      { data: { a: 1, hmac_sig: sig.toUpperCase() } },
      { data: { a: 1, hmac_sig: sig.slice(1) } },
      { data: { a: 1, hmac_sig: `${sig}0` } },
      { data: { a: 1, hmac_sig: sig.replace(/^./, 'z') } },
      { data: { a: 1, hmac_sig: 42 } },
      { data: { a: deep, hmac_sig: sig } },
      { data: { a: new Date(), hmac_sig: sig } },
    ];
    for (const value of cases) expect(verifyPayload(value, 'k')).toBe(false);
    expect(verifyPayload(good, '')).toBe(false);
    expect(verifyPayload(good, undefined as unknown as string)).toBe(false);
    expect(verifyPayload(good, 'k')).toBe(true);
  });

  it('signs the canonical form of the payload without its signature', () => {
    const signed = signPayload({ b: 'é', data: { z: 0.5, a: [1] } }, 'secret');
    expect(canonicalJson({ b: 'é', data: { a: [1], z: 0.5 } })).toBe('{"b":"\\u00e9","data":{"a":[1],"z":0.5}}');
    expect(signed.data.hmac_sig).toBe(computeHmac({ data: { a: [1], z: 0.5 }, b: 'é' }, 'secret'));
  });
});

/** Every object's keys in reverse order, at every depth; lexemes untouched. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (typeof value !== 'object' || value === null || value instanceof LosslessNumber) return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reverseKeys(v)]),
  );
}

/** JSON whitespace after every structural character outside strings, as a pretty printer would add. */
function loosen(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    out += c;
    if (inString) {
      if (c === '\\') out += text[++i];
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if ('{[,:'.includes(c)) out += ' \n\t\r ';
  }
  return ` ${out} `;
}
