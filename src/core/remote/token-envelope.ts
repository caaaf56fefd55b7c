import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { MamError } from '../errors.ts';

/** Contract §6: key = HKDF-SHA256(secret, salt = job_id, info = "mam-dispatch-v1", 32 bytes). */
const HKDF_INFO = 'mam-dispatch-v1';

export interface SealedToken {
  iv: string;
  ct: string;
  tag: string;
}

function dispatchKey(secret: string, jobId: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.from(jobId, 'utf8'), HKDF_INFO, 32));
}

/**
 * The job's auth token, encrypted with AES-256-GCM for the runner, so it never crosses the broker in
 * clear (the Python toolkit sent it as is). The key is salted with the job id, so a sealed token
 * moved into another job's dispatch does not open. No AAD: the contract fixes the scheme exactly.
 */
export function sealToken(token: string, secret: string, jobId: string): SealedToken {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', dispatchKey(secret, jobId), iv);
  const ct = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
  return { iv: iv.toString('base64url'), ct: ct.toString('base64url'), tag: cipher.getAuthTag().toString('base64url') };
}

export function openToken(sealed: SealedToken, secret: string, jobId: string): string {
  try {
    const decipher = createDecipheriv('aes-256-gcm', dispatchKey(secret, jobId), Buffer.from(sealed.iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new MamError(`job ${jobId}: the dispatch's token does not open with this MAM_DISPATCH_SECRET`);
  }
}
