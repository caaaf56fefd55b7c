import type { MqttClient } from 'mqtt';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import type { MamConfig } from '../config/config.ts';
import { MamError } from '../errors.ts';
import { FleetAudit } from './fleet-audit.ts';
import { closeFleetConnection, openFleetConnection } from './fleet-client.ts';
import { agentNameSchema, agentsRoot, bidTopic, requireFleetSecret, turnIdSchema } from './fleet-names.ts';
import { verifyBid } from './turn-bids.ts';

/**
 * What a turn's winner hands its holder (`MAM_TURN_HOLD`, JSON, in the environment: the process
 * list shows argv to every user of the host). The fleet secret is not in it: the holder loads the
 * configuration as the claim did, from the same environment and folder.
 */
export const turnHoldSchema = z.object({
  turn_id: turnIdSchema,
  agent: agentNameSchema,
  /** The winner's signed, decided bid, exactly as it was published. */
  payload: z.string(),
});
export type TurnHold = z.output<typeof turnHoldSchema>;
export const TURN_HOLD_ENV = 'MAM_TURN_HOLD';
/** What the holder prints on stdout once it guards the bid: the only line it ever prints there. */
export const HOLDING_LINE = 'HOLDING';

/**
 * Keeps one retained message standing: whatever else lands on its topic (an empty retained
 * publish that clears it, an unsigned or forged overwrite) is answered at once by publishing it
 * again. A broker without ACLs lets anyone do that; without the fleet secret nobody can publish a
 * bid that counts, so putting ours back is always right while our claim is unexpired.
 */
export class RetainedKeeper {
  private stopped = false;
  private inFlight = false;
  private again = false;

  constructor(
    private readonly client: MqttClient,
    readonly topic: string,
    private readonly payload: Buffer,
    private readonly onRestore: (reason: 'cleared' | 'replaced') => void,
  ) {}

  /** Feed it every message the client receives; others' topics are ignored. */
  readonly onMessage = (topic: string, payload: Buffer): void => {
    if (this.stopped || topic !== this.topic || payload.equals(this.payload)) return;
    this.onRestore(payload.length === 0 ? 'cleared' : 'replaced');
    this.republish();
  };

  /**
   * QoS 1, one at a time: a flood of clears costs one publish in flight and one more after it (the
   * broker may have handled a clear after the publish we had out), not a queue the attacker sizes.
   * MQTT.js resends an unacknowledged one after a reconnect.
   */
  republish(): void {
    if (this.stopped) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.inFlight = true;
    this.client.publish(this.topic, this.payload, { qos: 1, retain: true }, () => {
      this.inFlight = false;
      if (this.again) {
        this.again = false;
        this.republish();
      }
    });
  }

  stop(): void {
    this.stopped = true;
  }
}

/**
 * An audit of restores that an attacker cannot turn into a disk filler: the first at once, then at
 * most one line a second, counting what it folded in.
 */
export function throttledRestoreAudit(write: (entry: { reason: string; restores: number }) => void, everyMs = 1_000): (reason: string) => void {
  let last = Number.NEGATIVE_INFINITY;
  let folded = 0;
  return (reason) => {
    folded++;
    const now = Date.now();
    if (now - last < everyMs) return;
    last = now;
    write({ reason, restores: folded });
    folded = 0;
  };
}

export function parseTurnHold(text: string | undefined): TurnHold {
  if (text === undefined) throw new MamError(`${TURN_HOLD_ENV} is not set: mam-turn-holder is started by mam claim --broker`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new MamError(`${TURN_HOLD_ENV} is not JSON`);
  }
  const parsed = turnHoldSchema.safeParse(raw);
  if (!parsed.success) throw new MamError(`${TURN_HOLD_ENV}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/**
 * The holder's run: from now until the claim's `expires_at`, keep the winner's decided bid retained
 * on its topic (docs/coordination-reference.md, "A hostile broker client"). `ready` is called once
 * it is subscribed and has published the bid again, which is when the claim may exit. Resolves at
 * the expiry, or at once when `stop` resolves (SIGTERM).
 */
export async function holdTurn(config: MamConfig, hold: TurnHold, ready: () => void, stop: Promise<void>): Promise<void> {
  const secret = requireFleetSecret(config);
  const verdict = verifyBid({ turnId: hold.turn_id, agent: hold.agent }, Buffer.from(hold.payload), secret);
  if (!verdict.ok || verdict.bid.decided !== true) throw new MamError(`${TURN_HOLD_ENV}: not a decided bid of ${hold.agent} signed with the fleet secret`);
  const leftMs = Date.parse(verdict.bid.expires_at) - Date.now();
  if (leftMs <= 0) return;
  const audit = new FleetAudit(config.logDir);
  const topic = bidTopic(agentsRoot(config), hold.turn_id, hold.agent);
  // Reconnects for as long as the claim holds: a broker restart must not end the guard.
  const conn = await openFleetConnection(config, 'turn-holder', { reconnect: true });
  const restored = throttledRestoreAudit((entry) => audit.append('turn_restored', { turn_id: hold.turn_id, agent: hold.agent, ...entry, by: 'holder' }));
  const keeper = new RetainedKeeper(conn.client, topic, Buffer.from(hold.payload), restored);
  let timer: NodeJS.Timeout | undefined;
  try {
    conn.client.on('message', keeper.onMessage);
    // After a reconnect the bid may have been cleared while we were away, unseen: publish it again.
    conn.client.on('connect', () => keeper.republish());
    await conn.client.subscribeAsync(topic, { qos: 1 });
    // A clear between the claim's publish and our SUBSCRIBE would leave nothing retained to compare.
    await conn.client.publishAsync(topic, hold.payload, { qos: 1, retain: true });
    ready();
    await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, leftMs))), stop]);
  } finally {
    clearTimeout(timer);
    keeper.stop();
    await closeFleetConnection(conn);
  }
}
