import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson, canonicalJsonWithout, isPlainObject, normalizeForSigning } from './canonical-json.ts';
import { WireEncodeError } from './wire-errors.ts';

/**
 * Contract §3: `data.hmac_sig` = lowercase hex HMAC-SHA256 keyed by the job's `auth_token` over the
 * canonical JSON of the payload without `data.hmac_sig`. Remote dispatch signs the same way with
 * `MAM_DISPATCH_SECRET`, so every function here takes the key as a plain argument.
 */

const SIG_PATTERN = /^[0-9a-f]{64}$/;

/** HMAC-SHA256 (lowercase hex) of the canonical JSON of `payloadWithoutSig`, numbers as they stand. */
export function computeHmac(payloadWithoutSig: unknown, key: string | Uint8Array): string {
  return hmacHex(canonicalJson(payloadWithoutSig), key);
}

function hmacHex(message: string, key: string | Uint8Array): string {
  // A string key is taken as its UTF-8 bytes by createHmac itself, without a Buffer made here first.
  return createHmac('sha256', key).update(message, 'utf8').digest('hex');
}

/** The two signatures compared, as ASCII: filled in place, since a monitor verifies every message it reads. */
const expectedBytes = Buffer.alloc(64);
const givenBytes = Buffer.alloc(64);

export type Signed<T extends { data: object }> = T & { data: T['data'] & { hmac_sig: string } };

/**
 * A signed copy of `payload` (any `data.hmac_sig` in it is replaced). Numbers are normalized to
 * Python's spelling first: `LosslessNumber`s in the copy are re-spelled (`1E5` → `100000.0`), plain JS
 * numbers stay numbers (both writers spell them Python's way). Send the copy with `wireJson` and write
 * it to the audit with `wireJson` too: `JSON.stringify` does not know `LosslessNumber`.
 */
export function signPayload<T extends { data: object }>(payload: T, key: string): Signed<T> {
  // An empty key would make a signature anyone can forge; the registry never holds one.
  if (key.length === 0) throw new WireEncodeError('empty signing key');
  const unsigned = withoutSig(normalizeForSigning(payload, { keepJsNumbers: true }));
  if (unsigned === undefined) throw new WireEncodeError('payload.data must be a JSON object');
  const hmacSig = computeHmac(unsigned, key);
  return { ...unsigned, data: { ...unsigned.data, hmac_sig: hmacSig } } as unknown as Signed<T>;
}

/**
 * True when `parsed` (from `parseWireJson`: lexemes as on the wire) carries a valid `data.hmac_sig`
 * for `key`. Never throws: receivers call it on anything the broker hands them. The signature is
 * compared as text (Python's `compare_digest` of hex strings), so an upper-case signature is refused.
 */
export function verifyPayload(parsed: unknown, key: string): boolean {
  try {
    if (key.length === 0) return false;
    if (!isPlainObject(parsed) || !isPlainObject(parsed.data)) return false;
    const sig = parsed.data.hmac_sig;
    if (typeof sig !== 'string' || !SIG_PATTERN.test(sig)) return false;
    // The canonical JSON of the payload without data.hmac_sig, as computeHmac(withoutSig(parsed)) writes it.
    const expected = hmacHex(canonicalJsonWithout(parsed, 'data', 'hmac_sig'), key);
    // Both are 64 lowercase hex digits (the pattern above; a hex digest), so 64 bytes each.
    expectedBytes.write(expected, 'latin1');
    givenBytes.write(sig, 'latin1');
    return timingSafeEqual(expectedBytes, givenBytes);
  } catch {
    // A value canonicalJson cannot write (too deep, say) cannot have been signed.
    return false;
  }
}

function withoutSig(payload: unknown): (Record<string, unknown> & { data: Record<string, unknown> }) | undefined {
  if (!isPlainObject(payload) || !isPlainObject(payload.data)) return undefined;
  const { hmac_sig: _dropped, ...data } = payload.data;
  return { ...payload, data };
}
