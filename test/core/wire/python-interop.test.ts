import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseWireJson, pythonNumber, wireJson } from '../../../src/core/wire/canonical-json.ts';
import { buildEventPayload } from '../../../src/core/wire/payloads.ts';
import { signPayload, verifyPayload } from '../../../src/core/wire/signature.ts';
import { eventArgs, jsonValue, token } from './arbitraries.ts';

/** Runs a Python script with JSON on stdin and returns its JSON stdout: one process per batch. */
function python(script: string, input: unknown): unknown {
  const out = execFileSync('python3', ['-c', script], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    timeout: 20_000,
    env: { ...process.env, PYTHONIOENCODING: 'utf-8' },
  });
  return JSON.parse(out) as unknown;
}

function hasPython(): boolean {
  try {
    execFileSync('python3', ['-c', 'import json, hmac, hashlib'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// The reference verifier: what the Python toolkit does with a payload off the wire.
const PY_VERIFY = String.raw`
import hashlib, hmac, json, sys
results = []
for case in json.load(sys.stdin):
    payload = json.loads(case["wire"])
    sig = payload["data"].pop("hmac_sig")
    msg = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    expected = hmac.new(case["token"].encode("utf-8"), msg.encode("utf-8"), hashlib.sha256).hexdigest()
    results.append(hmac.compare_digest(expected, sig))
print(json.dumps(results))
`;

// The reference signer, writing with Python's default separators, raw UTF-8 or escaped.
const PY_SIGN = String.raw`
import hashlib, hmac, json, sys
out = []
for case in json.load(sys.stdin):
    payload = {"schema_version": 1, "seq": case["seq"], "job_id": "918b0612", "event": "progress",
               "timestamp": "2026-06-20T14:48:58Z", "detail": case["detail"],
               "data": {"dispatch_token": "5f0c6f1e2b3a4d5e8f9a0b1c2d3e4f50", "attempt_id": 1,
                        "ratio": 1.0, "tiny": 1e-07, "big": 1e16, "huge": 1.5e300, "neg0": -0.0,
                        "int": 10 ** 30, "nested": {"\ue000": [0.1, 2.0], "\U0001F600": "\u00e9"}}}
    msg = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    payload["data"]["hmac_sig"] = hmac.new(case["token"].encode("utf-8"), msg.encode("utf-8"), hashlib.sha256).hexdigest()
    out.append(json.dumps(payload, ensure_ascii=case["ascii"]))
print(json.dumps(out))
`;

const PY_NUMBERS = String.raw`
import json, sys
cases = json.load(sys.stdin)
print(json.dumps({"floats": [json.dumps(float(s)) for s in cases["floats"]],
                  "ints": [json.dumps(int(s)) for s in cases["ints"]]}))
`;

describe.skipIf(!hasPython())('Python interop (python3)', () => {
  it('Python verifies payloads we signed', () => {
    const cases = fc.sample(fc.record({ args: eventArgs, extra: jsonValue, token }), 150).map(({ args, extra, token: key }) => ({
      wire: wireJson(signPayload(buildEventPayload({ ...args, data: { ...args.data, extra } }), key)),
      token: key,
    }));
    cases.push({
      wire: wireJson(
        signPayload(
          buildEventPayload({
            jobId: '918b0612',
            seq: 9,
            event: 'completed',
            detail: 'café — 😀 \u2028 \u0001 "q" \\ /',
            data: { ratio: 1.0, tiny: 1e-7, big: 1e16, neg: -0.5, int: 10n ** 30n, '\ue000': 1, '\u{1f600}': 2 },
            dispatchToken: 'a'.repeat(32),
            attemptId: 2,
          }),
          'q3X9v1Jc0m7Qe2Rk8Lw5Zt4Yp6Ub1Nd3Hs0Fg7Aa9Cc',
        ),
      ),
      token: 'q3X9v1Jc0m7Qe2Rk8Lw5Zt4Yp6Ub1Nd3Hs0Fg7Aa9Cc',
    });
    const verdicts = python(PY_VERIFY, cases) as boolean[];
    expect(verdicts).toHaveLength(cases.length);
    const refused = cases.filter((_, i) => !verdicts[i]).map((c) => c.wire);
    expect(refused).toEqual([]);
  });

  it('we verify payloads Python signed (floats, unicode, astral; raw UTF-8 and escaped)', () => {
    const cases = [
      { seq: 1, detail: 'plain', token: 'tok', ascii: true },
      { seq: 2, detail: 'café — 😀 \u2028 \u0001 "q" \\ /', token: 'tök-😀', ascii: false },
      { seq: 3, detail: 'café — 😀', token: 'tok', ascii: true },
    ];
    const wires = python(PY_SIGN, cases) as string[];
    expect(wires).toHaveLength(cases.length);
    wires.forEach((wire, i) => {
      expect(wire).toContain('"ratio": 1.0, "tiny": 1e-07, "big": 1e+16');
      expect(verifyPayload(parseWireJson(Buffer.from(wire, 'utf8')), cases[i]!.token)).toBe(true);
      expect(verifyPayload(parseWireJson(wire), 'other')).toBe(false);
    });
  });

  it('pythonNumber spells numbers as Python does', () => {
    const doubles = fc.sample(fc.double({ noNaN: true, noDefaultInfinity: true }), 400);
    doubles.push(1e16, 1e-7, 1e-5, 1e-4, 9999999999999998, 2 ** 53, 5e-324, Number.MAX_VALUE, 0.1 + 0.2, 1e22, -0);
    // A float lexeme that round-trips exactly: toExponential() always carries an "e" (but drops -0's sign).
    const floats = doubles.map((d) => (Object.is(d, -0) ? '-0.0' : d.toExponential()));
    const ints = fc.sample(fc.bigInt({ min: -(10n ** 60n), max: 10n ** 60n }), 100).map(String);
    ints.push('-0', '0', '9007199254740993');
    const expected = python(PY_NUMBERS, { floats, ints }) as { floats: string[]; ints: string[] };
    expect(floats.map((s) => pythonNumber(s))).toEqual(expected.floats);
    expect(ints.map((s) => pythonNumber(s))).toEqual(expected.ints);
    // A JS number that is not a safe integer is a float for us, as for Python.
    doubles.forEach((d, i) => {
      if (!Number.isSafeInteger(d)) expect(pythonNumber(d)).toBe(expected.floats[i]);
    });
  });
});
