import { randomBytes } from 'node:crypto';
import type { MamConfig } from '../config/config.ts';
import { MamError } from '../errors.ts';
import { FleetAudit } from './fleet-audit.ts';
import { closeFleetConnection, openFleetConnection, publishAcked, subscribeAcked } from './fleet-client.ts';
import { agentsRoot, bidTopic, levelBelow, requireFleetSecret, turnFilter } from './fleet-names.ts';
import { type Bid, holderOf, signBid, signDecision, verifyBid } from './turn-bids.ts';
import type { ClaimResult } from './turn-claim.ts';
import { startTurnHolder } from './turn-holder-launch.ts';
import { RetainedKeeper, throttledRestoreAudit } from './turn-holder.ts';

export interface BrokerClaimOptions {
  turnId: string;
  agent: string;
  ttlSec: number;
  /**
   * The settle window in ms (default 1000): how long a bidder keeps listening after its own bid
   * came back. See docs/coordination-reference.md, "Which guarantee holds where", for the bound
   * this must exceed (a broker round trip plus the bidders' scheduling lag).
   */
  settleMs?: number | undefined;
  /**
   * Default true: a winner leaves a detached holder (`mam-turn-holder`) that keeps its decided bid
   * retained until the TTL against clears and overwrites. False only where the caller outlives the
   * turn or does not care (the in-process race tests).
   */
  hold?: boolean | undefined;
  /** A won claim whose holder could not start: the turn is still won, but unguarded. */
  onWarning?: ((line: string) => void) | undefined;
}

export const DEFAULT_SETTLE_MS = 1_000;
/** A fence or bid that does not come back from the broker in this long is a failure, not a loss. */
const ECHO_TIMEOUT_MS = 10_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A turn claim across hosts, over the broker alone (docs/coordination-reference.md, "The broker turn
 * claim", has the argument):
 *
 * 1. subscribe `<agents root>/turns/<turn>/+`, then publish an empty, unretained fence on a level of
 *    that filter and wait for it to come back: a broker delivers a subscription's retained messages
 *    before anything published after the SUBSCRIBE, so once the fence is back every bid already
 *    standing has been seen — no guessing how long retained delivery takes;
 * 2. if any unexpired bid is there, the turn is taken and nothing is published (a late claimant
 *    never disturbs a decided turn); it listens `settle` ms more, as bidders do, so that it names
 *    the same winner they name even when it arrived while their race was still running;
 * 3. otherwise publish this claimant's own bid (retained, QoS 1), wait for it to come back, listen
 *    `settle` ms more, and name the winner among every unexpired bid seen: the lowest bidRank.
 *
 * 4. a winner that bid publishes its bid again as `decided` and leaves a holder that keeps it
 *    retained until the TTL; a claimant that sees a decided bid defers to it whatever the ranks, so
 *    a clear of the winner's bid (any client can publish an empty retained message) that a later
 *    claimant slipped through is undone within its settle window (docs/coordination-reference.md,
 *    "A hostile broker client").
 *
 * Every decision waits `settle` ms and then passes a closing fence: it is taken on every bid the
 * broker routed before that fence, whatever this process was doing meanwhile (after an event-loop
 * stall Node runs the expired timer before it reads the socket; without the fence the bids that
 * arrived during the stall would be missed).
 *
 * Two claimants that both bid each reached their fence before the other's bid reached the broker
 * (else they would have seen it and not bid), so each receives the other's bid live, and the later
 * bid reaches the broker within one round trip of the later bidder's fence, which came back before
 * the earlier bid did: with a settle window longer than that round trip, all bidders decide on the
 * same set of bids and name the same winner. No clock is compared, save for the TTL.
 */
export async function claimTurnOverBroker(config: MamConfig, opts: BrokerClaimOptions): Promise<ClaimResult> {
  const secret = requireFleetSecret(config);
  const root = agentsRoot(config);
  const settleMs = opts.settleMs ?? DEFAULT_SETTLE_MS;
  const audit = new FleetAudit(config.logDir);
  const prefix = `${root}/turns/${opts.turnId}`;
  const bids = new Map<string, Bid>();
  let myNonce: string | undefined;
  let keeper: RetainedKeeper | undefined;
  const fences = new Map<string, () => void>();
  const echo = deferred();
  const conn = await openFleetConnection(config, 'claim');
  /** Publishes an empty, unretained message on a fresh level of the turn's filter and waits for it. */
  const passFence = async (what: string) => {
    const topic = `${prefix}/_fence_${randomBytes(8).toString('hex')}`;
    const back = deferred();
    fences.set(topic, back.resolve);
    await publishAcked(conn, topic, '', false);
    await comeBack(back.promise, conn.broker, `turn ${opts.turnId}: our ${what}`);
    fences.delete(topic);
  };
  try {
    conn.client.on('message', (topic, payload) => {
      const fence = fences.get(topic);
      if (fence) return fence();
      keeper?.onMessage(topic, payload);
      if (payload.length === 0) return; // a cleared bid, or another claimant's fence
      const verdict = verifyBid({ turnId: opts.turnId, agent: levelBelow(prefix, topic) }, payload, secret);
      if (!verdict.ok) {
        audit.append('rejected', { what: 'turn_bid', topic, reason: verdict.reason, turn_id: opts.turnId });
        return;
      }
      // Memory is monotonic: a decided bid is never replaced by an undecided one while it is live.
      const prev = bids.get(verdict.bid.agent);
      if (prev?.decided === true && verdict.bid.decided !== true && Date.parse(prev.expires_at) > Date.now()) return;
      bids.set(verdict.bid.agent, verdict.bid);
      if (myNonce !== undefined && verdict.bid.nonce === myNonce) echo.resolve();
    });
    await subscribeAcked(conn, [turnFilter(root, opts.turnId)]);
    await passFence('fence');
    const seen = live(bids);
    if (seen.length > 0) {
      await sleep(settleMs);
      await passFence('closing fence');
      const standing = live(bids);
      return decide(opts, standing.length > 0 ? standing : seen, audit, false);
    }
    const { payload, nonce } = signBid(opts.turnId, opts.agent, opts.ttlSec, secret);
    myNonce = nonce;
    await publishAcked(conn, bidTopic(root, opts.turnId, opts.agent), payload, true);
    await comeBack(echo.promise, conn.broker, `turn ${opts.turnId}: our bid`);
    await sleep(settleMs);
    await passFence('closing fence');
    const result = decide(opts, live(bids), audit, true);
    if (!result.won) return result;
    const mine = bids.get(opts.agent)!;
    const decided = signDecision(mine, secret);
    const topic = bidTopic(root, opts.turnId, opts.agent);
    // Guard from the moment the decision is out until the holder has taken over: no gap.
    const restored = throttledRestoreAudit((entry) => audit.append('turn_restored', { turn_id: opts.turnId, agent: opts.agent, ...entry, by: 'claim' }));
    keeper = new RetainedKeeper(conn.client, topic, Buffer.from(decided), restored);
    try {
      await publishAcked(conn, topic, decided, true);
      if (opts.hold !== false) {
        const pid = await startTurnHolder({ turn_id: opts.turnId, agent: opts.agent, payload: decided }, config.env);
        audit.append('turn_held', { turn_id: opts.turnId, agent: opts.agent, holder_pid: pid, until: result.expires_at });
      }
    } catch (err) {
      // Decided is decided: the bid that won stands, and every bidder named this claimant already.
      opts.onWarning?.(`turn ${opts.turnId} is won but unguarded until ${result.expires_at}: ${(err as Error).message}`);
    }
    return result;
  } finally {
    keeper?.stop();
    await closeFleetConnection(conn);
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function comeBack(arrived: Promise<void>, broker: string, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ECHO_TIMEOUT_MS)));
  const came = await Promise.race([arrived.then(() => 'back' as const), timedOut]);
  clearTimeout(timer);
  if (came === 'timeout') throw new MamError(`${what} did not come back from ${broker} within ${ECHO_TIMEOUT_MS / 1000} s`);
}

/** Bids whose TTL has not run out (the reader's clock: see the docs on skew). */
function live(bids: Map<string, Bid>): Bid[] {
  const now = Date.now();
  return [...bids.values()].filter((b) => Date.parse(b.expires_at) > now);
}

function decide(opts: BrokerClaimOptions, standing: Bid[], audit: FleetAudit, bid: boolean): ClaimResult {
  const held = holderOf(opts.turnId, standing)!;
  const winner = held.agent;
  const won = winner === opts.agent;
  audit.append(won ? 'claimed' : 'claim_lost', {
    turn_id: opts.turnId,
    agent: opts.agent,
    winner,
    via: 'broker',
    bid,
    bidders: standing.length,
    decided: held.decided === true,
  });
  return { turn_id: opts.turnId, agent: opts.agent, won, winner, expires_at: held.expires_at, via: 'broker' };
}
