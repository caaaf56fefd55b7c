import { MamError } from '../core/errors.ts';
import type { ClaimResult } from '../core/fleet/turn-claim.ts';
import { BrokerError } from '../core/mqtt/broker-errors.ts';
import { type CommandContext, warnIfPublicSandbox } from './context.ts';

export interface TurnClaimAsk {
  turnId: string;
  agent: string;
  ttlSec: number;
  /** Across hosts over the broker (signed bids) rather than in the registry. */
  broker?: boolean | undefined;
  settleMs?: number | undefined;
}

/** The claim of `mam claim` and `mam mentions`: in the registry, or over the broker. */
export async function claimTurn(ctx: CommandContext, ask: TurnClaimAsk): Promise<ClaimResult> {
  const config = ctx.config();
  if (!ask.broker) {
    const { claimTurnInRegistry } = await import('../core/fleet/turn-claim.ts');
    return claimTurnInRegistry(ctx.registry(), config.logDir, ask.turnId, ask.agent, ask.ttlSec);
  }
  await warnIfPublicSandbox(ctx);
  const { claimTurnOverBroker } = await import('../core/fleet/turn-claim-broker.ts');
  try {
    return await claimTurnOverBroker(config, { turnId: ask.turnId, agent: ask.agent, ttlSec: ask.ttlSec, settleMs: ask.settleMs, onWarning: ctx.warn });
  } catch (err) {
    // Exit 1, not the publishers' 2: a claim that could not be decided is a failure, never a loss.
    if (err instanceof BrokerError) throw new MamError(err.message);
    throw err;
  }
}
