import { LosslessNumber, isLosslessNumber } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { MessageVerifier } from '../../../src/core/subscriber/message-verifier.ts';
import { jsonLine } from '../../../src/core/subscriber/output.ts';
import { wireJson } from '../../../src/core/wire/canonical-json.ts';
import { buildEventPayload, buildStatePayload } from '../../../src/core/wire/payloads.ts';
import { signPayload } from '../../../src/core/wire/signature.ts';
import { eventsTopic, stateTopic } from '../../../src/core/wire/topics.ts';
import { input, tempRegistry } from '../registry/registry-fixtures.ts';

// A monitor prints the wire text itself when it is already the line jsonLine would write (issue 17):
// the line must be byte for byte the same as before, for our compact payloads and for a Python
// sender's (spaces, raw UTF-8, `1.0`), and every one of them is still verified.

const ROOT = 'python/mqtt/jobs';

/** `json.dumps(obj)` with Python's default separators; `ascii` as ensure_ascii (else raw UTF-8). */
function pythonDumps(value: unknown, ascii: boolean): string {
  if (isLosslessNumber(value)) return value.value;
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return ascii ? wireJson(value) : JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => pythonDumps(v, ascii)).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${pythonDumps(k, ascii)}: ${pythonDumps(v, ascii)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}

describe('MessageVerifier: the line of an accepted message', () => {
  it('is what jsonLine wrote before, whichever way the payload was spelled on the wire', async () => {
    const { registry } = tempRegistry();
    const record = await registry.register(input());
    const verifier = new MessageVerifier(ROOT, registry, () => true);
    const common = { jobId: record.job_id, dispatchToken: record.dispatch_token, attemptId: record.attempt_id, now: new Date('2026-06-20T14:48:58Z') };
    const data = {
      ratio: new LosslessNumber('1.0'),
      big: new LosslessNumber('123456789012345678901234567890'),
      tiny: new LosslessNumber('1e-07'),
      neg: new LosslessNumber('-0'),
    };
    const payloads = [
      signPayload(buildEventPayload({ ...common, seq: 1, event: 'started', detail: 'plain ascii' }), record.auth_token),
      signPayload(buildEventPayload({ ...common, seq: 2, event: 'progress', detail: 'caf\u00e9 \u{1f600} "quoted" \\ back\nslash', data }), record.auth_token),
      signPayload(
        buildEventPayload({ ...common, seq: 3, event: 'progress', detail: 'numbers', data: { ...data, list: [1.5, -2, { '0': 'index key' }] } }),
        record.auth_token,
      ),
    ];
    let seq = 10;
    let compactSeen = 0;
    for (const signed of payloads) {
      for (const text of [wireJson(signed), pythonDumps(signed, true), pythonDumps(signed, false), JSON.stringify(JSON.parse(wireJson(signed)))]) {
        // A fresh seq each time is not needed: the verifier does not track seqs, the watch does.
        const verdict = verifier.verify(eventsTopic(ROOT, record.job_id), Buffer.from(text), false, seq++);
        if (text === JSON.stringify(JSON.parse(wireJson(signed))) && text !== wireJson(signed)) {
          // JSON.stringify lost a lexeme (1.0 → 1): the signature no longer matches, as before.
          expect(verdict).toMatchObject({ ok: false, reason: 'hmac' });
          continue;
        }
        expect(verdict.ok, text).toBe(true);
        if (!verdict.ok) continue;
        const { payload, wireText } = verdict.message;
        expect(jsonLine(payload, wireText)).toBe(jsonLine(payload));
        if (wireText !== undefined) {
          expect(wireText).toBe(text);
          compactSeen++;
        }
      }
    }
    // Our own plain payload, sent compact, goes out as it came.
    expect(compactSeen).toBeGreaterThanOrEqual(1);
    expect(verifier.verify(eventsTopic(ROOT, record.job_id), Buffer.from(wireJson(payloads[0]!)), false, 99)).toMatchObject({
      ok: true,
      message: { wireText: wireJson(payloads[0]!) },
    });
  });

  it('a state line too', async () => {
    const { registry } = tempRegistry();
    const record = await registry.register(input());
    const verifier = new MessageVerifier(ROOT, registry, () => true);
    const signed = signPayload(
      buildStatePayload({
        jobId: record.job_id,
        seq: 4,
        status: 'completed',
        lastEvent: 'completed',
        detail: 'done',
        dispatchToken: record.dispatch_token,
        attemptId: record.attempt_id,
      }),
      record.auth_token,
    );
    const text = wireJson(signed);
    const verdict = verifier.verify(stateTopic(ROOT, record.job_id), Buffer.from(text), true, 1);
    expect(verdict).toMatchObject({ ok: true, message: { kind: 'state', wireText: text, retained: true } });
    if (verdict.ok) expect(jsonLine(verdict.message.payload, verdict.message.wireText)).toBe(`${text}\n`);
  });
});
