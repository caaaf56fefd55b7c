import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import { writeJsonAtomic } from '../registry/record-store.ts';
import type { Registry } from '../registry/registry.ts';
import { FleetAudit } from './fleet-audit.ts';

/** What `mam claim` prints: who holds the turn, until when, and whether it is the caller. */
export interface ClaimResult {
  turn_id: string;
  agent: string;
  won: boolean;
  /** The claimant that holds the turn (the caller when `won`). */
  winner: string;
  expires_at: string;
  via: 'registry' | 'broker';
}

const claimFileSchema = z.object({
  turn_id: z.string(),
  agent: z.string(),
  claimed_at: z.string(),
  expires_at: z.string(),
});

export function turnClaimPath(registryDir: string, turnId: string): string {
  return path.join(registryDir, 'turns', `${turnId}.json`);
}

function readClaim(file: string): z.infer<typeof claimFileSchema> | undefined {
  try {
    const parsed = claimFileSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A turn claim on one registry (a local or shared folder): a compare-and-set of
 * `<registry>/turns/<turn id>.json` under the registry lock, so exactly one claimant of a turn wins
 * until the claim expires. The same agent claiming again gets its own claim back (a retry is not a
 * second answer); an unreadable claim file counts as no claim, and is replaced.
 */
export async function claimTurnInRegistry(registry: Registry, logDir: string, turnId: string, agent: string, ttlSec: number): Promise<ClaimResult> {
  const file = turnClaimPath(registry.paths.registryDir, turnId);
  const result = await registry.withLock(async () => {
    const now = Date.now();
    const held = readClaim(file);
    if (held && Date.parse(held.expires_at) > now) {
      return { turn_id: turnId, agent, won: held.agent === agent, winner: held.agent, expires_at: held.expires_at, via: 'registry' as const };
    }
    const expiresAt = new Date(now + ttlSec * 1000).toISOString();
    await writeJsonAtomic(file, { turn_id: turnId, agent, claimed_at: new Date(now).toISOString(), expires_at: expiresAt });
    return { turn_id: turnId, agent, won: true, winner: agent, expires_at: expiresAt, via: 'registry' as const };
  });
  new FleetAudit(logDir).append(result.won ? 'claimed' : 'claim_lost', { turn_id: turnId, agent, winner: result.winner, via: 'registry' });
  return result;
}
