import { randomBytes } from 'node:crypto';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import { isoMillisSchema } from '../timestamps.ts';
import { parseWireJson, wireJson } from '../wire/canonical-json.ts';
import { MAX_WIRE_BYTES } from '../wire/payloads.ts';
import { signPayload, verifyPayload } from '../wire/signature.ts';
import { agentNameSchema, levelBelow, turnIdSchema } from './fleet-names.ts';

/**
 * The roundtable's two messages (docs/coordination-reference.md, "The roundtable"), signed with
 * `MAM_FLEET_SECRET` like presence and bids, and retained so that an agent that was away finds its
 * invitation and a claimant that asks late finds the counsel already given:
 * - the claimant's invitation, `<agents root>/roundtable/<turn>/invite`: whom it asks (agent names or
 *   `capability:<name>`), the question, the deadline;
 * - each counsel, `<agents root>/roundtable/<turn>/counsel/<agent>`: one per agent, naming the
 *   invitation it answers by its nonce, so counsel to an earlier invitation of the same turn is not
 *   taken for an answer to this one.
 */

/** A question or a counsel is prose for a model to read, not a document. */
export const MAX_ROUNDTABLE_TEXT = 16 * 1024;
const text = z.string().check(z.minLength(1), z.maxLength(MAX_ROUNDTABLE_TEXT));

export const inviteSchema = z.looseObject({
  event: z.literal('roundtable_invite'),
  turn_id: turnIdSchema,
  from: agentNameSchema,
  to: z.array(z.string()).check(z.minLength(1), z.maxLength(64)),
  question: text,
  at: isoMillisSchema,
  deadline: isoMillisSchema,
  nonce: z.string(),
  data: z.looseObject({ hmac_sig: z.string() }),
});
export type Invite = z.output<typeof inviteSchema>;
/** What the roundtable reads of an invitation, signed or not yet. */
export interface InviteBody {
  turn_id: string;
  from: string;
  to: string[];
  question: string;
  at: string;
  deadline: string;
  nonce: string;
}

export const counselSchema = z.looseObject({
  event: z.literal('roundtable_counsel'),
  turn_id: turnIdSchema,
  agent: agentNameSchema,
  /** The address of the invitation it answers under: the agent's name or one of its capabilities. */
  as: z.string(),
  invite_nonce: z.string(),
  text,
  at: isoMillisSchema,
  data: z.looseObject({ hmac_sig: z.string() }),
});
export type Counsel = z.output<typeof counselSchema>;

export const roundtableRoot = (root: string, turnId: string): string => `${root}/roundtable/${turnId}`;
export const inviteTopic = (root: string, turnId: string): string => `${roundtableRoot(root, turnId)}/invite`;
export const counselTopic = (root: string, turnId: string, agent: string): string => `${roundtableRoot(root, turnId)}/counsel/${agent}`;
export const counselFilter = (root: string, turnId: string): string => `${roundtableRoot(root, turnId)}/counsel/+`;
export const allInvitesFilter = (root: string): string => `${root}/roundtable/+/invite`;
/** Every counsel `agent` gave, on every turn: how `mam inbox` knows which invitations it answered. */
export const agentCounselFilter = (root: string, agent: string): string => `${root}/roundtable/+/counsel/${agent}`;

export function signInvite(
  fields: { turnId: string; from: string; to: readonly string[]; question: string; deadlineSec: number },
  secret: string,
  now = new Date(),
): { payload: string; invite: InviteBody } {
  const invite = {
    schema_version: 1,
    event: 'roundtable_invite' as const,
    turn_id: fields.turnId,
    from: fields.from,
    to: [...fields.to],
    question: fields.question,
    at: now.toISOString(),
    deadline: new Date(now.getTime() + fields.deadlineSec * 1000).toISOString(),
    nonce: randomBytes(8).toString('hex'),
  };
  return { payload: wireJson(signPayload({ ...invite, data: {} }, secret)), invite };
}

export function signCounsel(fields: { invite: InviteBody; agent: string; as: string; text: string }, secret: string, now = new Date()): string {
  const counsel = {
    schema_version: 1,
    event: 'roundtable_counsel',
    turn_id: fields.invite.turn_id,
    agent: fields.agent,
    as: fields.as,
    invite_nonce: fields.invite.nonce,
    text: fields.text,
    at: now.toISOString(),
    data: {},
  };
  return wireJson(signPayload(counsel, secret));
}

export type Verdict<T> = { ok: true; message: T } | { ok: false; reason: 'schema' | 'hmac' | 'topic' };

/** An invitation counts only on its own turn's topic and with a valid signature. */
export function verifyInvite(root: string, topic: string, payload: Buffer, secret: string): Verdict<Invite> {
  const parsed = parse(payload);
  const checked = parsed === undefined ? undefined : inviteSchema.safeParse(parsed);
  if (!checked?.success) return { ok: false, reason: 'schema' };
  if (topic !== inviteTopic(root, checked.data.turn_id)) return { ok: false, reason: 'topic' };
  if (!verifyPayload(parsed, secret)) return { ok: false, reason: 'hmac' };
  return { ok: true, message: checked.data };
}

/** A counsel counts only on its own agent's topic of its turn, and with a valid signature. */
export function verifyCounsel(root: string, topic: string, payload: Buffer, secret: string): Verdict<Counsel> {
  const parsed = parse(payload);
  const checked = parsed === undefined ? undefined : counselSchema.safeParse(parsed);
  if (!checked?.success) return { ok: false, reason: 'schema' };
  if (levelBelow(`${roundtableRoot(root, checked.data.turn_id)}/counsel`, topic) !== checked.data.agent) return { ok: false, reason: 'topic' };
  if (!verifyPayload(parsed, secret)) return { ok: false, reason: 'hmac' };
  return { ok: true, message: checked.data };
}

/** Whether `agent` (with `capabilities`) is among an invitation's addressees, and under which address. */
export function invitedAs(invite: Pick<InviteBody, 'to'>, agent: string, capabilities: readonly string[]): string | undefined {
  return invite.to.find((to) => to === agent || (to.startsWith('capability:') && capabilities.includes(to.slice('capability:'.length))));
}

function parse(payload: Buffer): unknown {
  if (payload.length === 0 || payload.length > MAX_WIRE_BYTES) return undefined;
  try {
    return parseWireJson(payload);
  } catch {
    return undefined;
  }
}
