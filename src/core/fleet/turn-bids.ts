import { createHash, randomBytes } from 'node:crypto';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import { isoMillisSchema } from '../timestamps.ts';
import { parseWireJson, wireJson } from '../wire/canonical-json.ts';
import { MAX_WIRE_BYTES } from '../wire/payloads.ts';
import { signPayload, verifyPayload } from '../wire/signature.ts';
import { agentNameSchema, turnIdSchema } from './fleet-names.ts';

/**
 * A turn bid (docs/coordination-reference.md, "Across hosts"): retained on
 * `<agents root>/turns/<turn id>/<agent>`, signed with `MAM_FLEET_SECRET` like presence. `nonce`
 * tells a claimant its own fresh bid from one it left on the broker earlier. `decided: true` is the
 * winner's bid re-published once it has won: a claimant that sees one defers to it whatever the
 * ranks, so a winner's bid that was cleared and restored while a later claimant was bidding still
 * holds the turn (issue 24).
 */

export const bidSchema = z.looseObject({
  event: z.literal('turn_bid'),
  turn_id: turnIdSchema,
  agent: agentNameSchema,
  at: isoMillisSchema,
  expires_at: isoMillisSchema,
  nonce: z.string(),
  decided: z.optional(z.boolean()),
  data: z.looseObject({ hmac_sig: z.string() }),
});
export type Bid = z.output<typeof bidSchema>;

export function signBid(turnId: string, agent: string, ttlSec: number, secret: string, now = new Date()): { payload: string; nonce: string } {
  const nonce = randomBytes(8).toString('hex');
  const bid = {
    schema_version: 1,
    event: 'turn_bid',
    turn_id: turnId,
    agent,
    at: now.toISOString(),
    expires_at: new Date(now.getTime() + ttlSec * 1000).toISOString(),
    nonce,
    data: {},
  };
  return { payload: wireJson(signPayload(bid, secret)), nonce };
}

/**
 * The winner's bid as a decision: the same turn, agent, times and nonce, `decided: true`, signed
 * anew. A field an older claimant ignores (the schema is loose), so it still counts there as a bid.
 */
export function signDecision(bid: Bid, secret: string): string {
  const { data: _signature, ...rest } = bid;
  return wireJson(signPayload({ ...rest, decided: true, data: {} }, secret));
}

export type BidVerdict = { ok: true; bid: Bid } | { ok: false; reason: 'schema' | 'hmac' | 'topic' };

/** A bid counts only on its own topic (its turn, its agent) and with a valid signature. */
export function verifyBid(expected: { turnId: string; agent: string | undefined }, payload: Buffer, secret: string): BidVerdict {
  if (payload.length > MAX_WIRE_BYTES) return { ok: false, reason: 'schema' };
  let parsed: unknown;
  try {
    parsed = parseWireJson(payload);
  } catch {
    return { ok: false, reason: 'schema' };
  }
  const checked = bidSchema.safeParse(parsed);
  if (!checked.success) return { ok: false, reason: 'schema' };
  if (checked.data.turn_id !== expected.turnId || checked.data.agent !== expected.agent) return { ok: false, reason: 'topic' };
  if (!verifyPayload(parsed, secret)) return { ok: false, reason: 'hmac' };
  return { ok: true, bid: checked.data };
}

/**
 * The order every claimant applies to the same set of bids: SHA-256 of `<turn id>\n<agent>`, lowest
 * first. A hash, not the name, so that no agent wins every turn for sorting first; the same for all,
 * so that every claimant that saw the same bids names the same winner.
 */
export function bidRank(turnId: string, agent: string): string {
  return createHash('sha256').update(`${turnId}\n${agent}`).digest('hex');
}

/**
 * Who holds the turn among unexpired bids: a decided bid outranks every undecided one (a decision is
 * only published by a claimant that won, so deferring to it can only make a claimant lose), then
 * the lowest bidRank.
 */
export function holderOf(turnId: string, bids: readonly Bid[]): Bid | undefined {
  const decided = bids.filter((b) => b.decided === true);
  const pool = decided.length > 0 ? decided : bids;
  const winner = winnerOf(
    turnId,
    pool.map((b) => b.agent),
  );
  return pool.find((b) => b.agent === winner);
}

export function winnerOf(turnId: string, agents: Iterable<string>): string | undefined {
  let best: { agent: string; rank: string } | undefined;
  for (const agent of agents) {
    const rank = bidRank(turnId, agent);
    if (!best || rank < best.rank) best = { agent, rank };
  }
  return best?.agent;
}
