import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { canonicalJson, parseWireJson } from '../../../src/core/wire/canonical-json.ts';
import { computeHmac, verifyPayload } from '../../../src/core/wire/signature.ts';

interface Vector {
  name: string;
  note: string;
  auth_token: string;
  wire: string;
  canonical: string;
  hmac_sig: string;
  valid: boolean;
}

// This file is test/core/wire/vectors.test.ts: three levels below the repo root.
const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../../..');
const fixturePath = path.join(repoRoot, 'test/fixtures/hmac.json');
// Contract §3 names `../shared/vectors/hmac.json`, relative to the repo root.
const sharedPath = path.resolve(repoRoot, '../shared/vectors/hmac.json');

const { vectors } = JSON.parse(readFileSync(fixturePath, 'utf8')) as { vectors: Vector[] };

function withoutSig(parsed: unknown): unknown {
  const { data, ...rest } = parsed as { data: Record<string, unknown> };
  const { hmac_sig: _sig, ...unsignedData } = data;
  return { ...rest, data: unsignedData };
}

describe('HMAC vectors (test/fixtures/hmac.json)', () => {
  it('holds both valid and invalid vectors', () => {
    expect(vectors.some((v) => v.valid)).toBe(true);
    expect(vectors.some((v) => !v.valid)).toBe(true);
  });

  describe.each(vectors.map((v) => [v.name, v] as const))('%s', (_name, vector) => {
    const parsed = parseWireJson(vector.wire);

    it('has the canonical form of the vector', () => {
      expect(canonicalJson(withoutSig(parsed))).toBe(vector.canonical);
    });

    it(`recomputes the signature exactly when valid (${vector.valid})`, () => {
      const hmac = computeHmac(withoutSig(parsed), vector.auth_token);
      expect(hmac === vector.hmac_sig).toBe(vector.valid);
    });

    it(`verifyPayload says ${vector.valid}`, () => {
      expect(verifyPayload(parsed, vector.auth_token)).toBe(vector.valid);
    });
  });
});

describe('the fixture is the shared copy', () => {
  it('is byte-identical to ../shared/vectors/hmac.json', (ctx) => {
    if (!existsSync(sharedPath)) ctx.skip(`${sharedPath} is absent: nothing to compare the fixture with`);
    expect(readFileSync(fixturePath).equals(readFileSync(sharedPath))).toBe(true);
  });
});
