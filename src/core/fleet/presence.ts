import { isLosslessNumber } from 'lossless-json';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import { isoMillisSchema } from '../timestamps.ts';
import { parseWireJson, wireJson } from '../wire/canonical-json.ts';
import { MAX_WIRE_BYTES } from '../wire/payloads.ts';
import { signPayload, verifyPayload } from '../wire/signature.ts';
import { agentNameSchema, capabilitySchema, levelBelow } from './fleet-names.ts';

/**
 * An agent's presence (docs/coordination-reference.md, "Agents and presence"): retained on
 * `<agents root>/<name>`, signed like a job event (`data.hmac_sig`, canonical JSON) but keyed by
 * `MAM_FLEET_SECRET`. `reason` says why an offline one was written: `shutdown` (a clean stop) or
 * `connection_lost` (the Last Will, signed at connect time and published by the broker when the
 * connection dies).
 */
export const PRESENCE_STATUSES = ['online', 'offline'] as const;
export type PresenceStatus = (typeof PRESENCE_STATUSES)[number];

/** Numbers arrive as LosslessNumbers from parseWireJson; the schema reads them as plain ones. */
const plainNumber = z.transform((v: unknown) => (isLosslessNumber(v) ? Number(v.value) : v));
const positive = z.pipe(plainNumber, z.number().check(z.positive()));

export const presenceSchema = z.looseObject({
  schema_version: z.pipe(plainNumber, z.literal(1)),
  event: z.literal('presence'),
  agent: agentNameSchema,
  host: z.string(),
  capabilities: z.array(capabilitySchema),
  status: z.enum(PRESENCE_STATUSES),
  reason: z.optional(z.string()),
  /** The writer's connection (a fresh one per CONNECT): tells its own messages from a twin's or an old will. */
  session: z.optional(z.string()),
  /** When this agent was last known alive: the writer's clock, refreshed every `refresh_sec`. */
  last_seen: isoMillisSchema,
  since: isoMillisSchema,
  refresh_sec: positive,
  data: z.looseObject({ hmac_sig: z.string() }),
});
export type Presence = z.output<typeof presenceSchema>;

export interface PresenceInput {
  agent: string;
  host: string;
  capabilities: string[];
  status: PresenceStatus;
  reason?: string | undefined;
  session?: string | undefined;
  since: string;
  refreshSec: number;
  now?: Date | undefined;
}

export function signPresence(input: PresenceInput, secret: string): string {
  return wireJson(
    signPayload(
      {
        schema_version: 1,
        event: 'presence',
        agent: input.agent,
        host: input.host,
        capabilities: input.capabilities,
        status: input.status,
        ...(input.reason === undefined ? {} : { reason: input.reason }),
        ...(input.session === undefined ? {} : { session: input.session }),
        last_seen: (input.now ?? new Date()).toISOString(),
        since: input.since,
        refresh_sec: input.refreshSec,
        data: {},
      },
      secret,
    ),
  );
}

export type PresenceVerdict = { ok: true; presence: Presence } | { ok: false; reason: 'schema' | 'hmac' | 'topic'; agent?: string | undefined };

/**
 * A received presence, checked in the order that costs a forger the most: parse, schema, the topic
 * names the same agent (a valid message replayed on another agent's topic is refused), signature.
 */
export function verifyPresence(root: string, topic: string, payload: Buffer, secret: string): PresenceVerdict {
  const agent = levelBelow(root, topic);
  if (payload.length > MAX_WIRE_BYTES) return { ok: false, reason: 'schema', agent };
  let parsed: unknown;
  try {
    parsed = parseWireJson(payload);
  } catch {
    return { ok: false, reason: 'schema', agent };
  }
  const checked = presenceSchema.safeParse(parsed);
  if (!checked.success) return { ok: false, reason: 'schema', agent };
  if (checked.data.agent !== agent) return { ok: false, reason: 'topic', agent };
  if (!verifyPayload(parsed, secret)) return { ok: false, reason: 'hmac', agent };
  return { ok: true, presence: checked.data };
}

/** Staleness: an online presence not refreshed for this many periods is shown `stale`. */
export const STALE_PERIODS = 3;

export type AgentStatus = 'online' | 'offline' | 'stale';

/** What a reader makes of a presence at `nowMs` (its own clock: hosts' clocks are assumed close, see the docs). */
export function statusOf(presence: Pick<Presence, 'status' | 'last_seen' | 'refresh_sec'>, nowMs: number): AgentStatus {
  if (presence.status === 'offline') return 'offline';
  return nowMs - Date.parse(presence.last_seen) > STALE_PERIODS * presence.refresh_sec * 1000 ? 'stale' : 'online';
}
