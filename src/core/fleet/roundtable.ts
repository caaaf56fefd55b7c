import type { MamConfig } from '../config/config.ts';
import { FleetAudit } from './fleet-audit.ts';
import { closeFleetConnection, openFleetConnection, publishAcked, subscribeAcked } from './fleet-client.ts';
import { agentsRoot, requireFleetSecret } from './fleet-names.ts';
import {
  type Counsel,
  type Invite,
  type InviteBody,
  agentCounselFilter,
  allInvitesFilter,
  counselFilter,
  counselTopic,
  invitedAs,
  inviteTopic,
  signCounsel,
  signInvite,
  verifyCounsel,
  verifyInvite,
} from './roundtable-messages.ts';

/**
 * The seed's roundtable (docs/coordination-reference.md, "The roundtable"): the claimant of a turn
 * invites counsel (`ask`), each invited agent answers once (`giveCounsel`), and the claimant gets
 * back what arrived by the deadline, to synthesize the one answer the human sees. Counsel after the
 * deadline stays on the broker and is listed as late, never as on time.
 */

export interface CounselLine {
  agent: string;
  as: string;
  text: string;
  at: string;
}

export interface RoundtableResult {
  turn_id: string;
  from: string;
  question: string;
  invited: string[];
  deadline: string;
  /** Given by the deadline: what the claimant synthesizes. */
  counsel: CounselLine[];
  /** Given after it: recorded, not counsel the answer was built on. */
  late: CounselLine[];
  /** Addresses with no counsel under them. */
  missing: string[];
}

/** How long a read waits for retained messages after its SUBACK. */
export const DEFAULT_SETTLE_MS = 500;

export interface AskOptions {
  turnId: string;
  from: string;
  to: readonly string[];
  question: string;
  deadlineSec: number;
}

/** Invites, then collects until the deadline, or until every agent invited by name has answered. */
export async function askRoundtable(config: MamConfig, opts: AskOptions): Promise<RoundtableResult> {
  const secret = requireFleetSecret(config);
  const root = agentsRoot(config);
  const audit = new FleetAudit(config.logDir);
  const conn = await openFleetConnection(config, 'roundtable');
  try {
    const received = new Map<string, Counsel>();
    const { payload, invite } = signInvite({ ...opts }, secret);
    let allIn: () => void = () => undefined;
    const everyoneAnswered = new Promise<void>((resolve) => (allIn = resolve));
    const byName = opts.to.every((to) => !to.startsWith('capability:'));
    conn.client.on('message', (topic, body) => {
      const c = acceptCounsel(root, topic, body, secret, invite, received, audit);
      if (c && byName && opts.to.every((to) => received.has(to))) allIn();
    });
    await subscribeAcked(conn, [counselFilter(root, opts.turnId)]);
    await publishAcked(conn, inviteTopic(root, opts.turnId), payload, true);
    audit.append('roundtable_invited', { turn_id: opts.turnId, from: opts.from, to: opts.to, deadline: invite.deadline });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, Date.parse(invite.deadline) - Date.now()))));
    await Promise.race([deadline, everyoneAnswered]);
    clearTimeout(timer);
    return resultOf(invite, [...received.values()]);
  } finally {
    await closeFleetConnection(conn);
  }
}

export type CounselOutcome =
  | { given: true; turn_id: string; agent: string; as: string; deadline: string; late: boolean }
  | { given: false; turn_id: string; agent: string; reason: 'no_invitation' | 'not_invited' | 'already_given' };

/** One counsel from `agent`: refused without an invitation that names it (or a capability of it), and the second time. */
export async function giveCounsel(
  config: MamConfig,
  opts: { turnId: string; agent: string; capabilities: readonly string[]; text: string; settleMs?: number | undefined },
): Promise<CounselOutcome> {
  const secret = requireFleetSecret(config);
  const root = agentsRoot(config);
  const audit = new FleetAudit(config.logDir);
  const conn = await openFleetConnection(config, 'counsel');
  try {
    let invite: Invite | undefined;
    let mine: Counsel | undefined;
    conn.client.on('message', (topic, body) => {
      if (body.length === 0) return;
      if (topic === inviteTopic(root, opts.turnId)) {
        const v = verifyInvite(root, topic, body, secret);
        if (v.ok) invite = v.message;
        else audit.append('rejected', { what: 'roundtable_invite', topic, reason: v.reason });
        return;
      }
      const v = verifyCounsel(root, topic, body, secret);
      if (v.ok) mine = v.message;
      else audit.append('rejected', { what: 'roundtable_counsel', topic, reason: v.reason });
    });
    await subscribeAcked(conn, [inviteTopic(root, opts.turnId), counselTopic(root, opts.turnId, opts.agent)]);
    await settle(opts.settleMs);
    const base = { turn_id: opts.turnId, agent: opts.agent };
    if (!invite) return { ...base, given: false, reason: 'no_invitation' };
    const as = invitedAs(invite, opts.agent, opts.capabilities);
    if (as === undefined) return { ...base, given: false, reason: 'not_invited' };
    const answered = mine as Counsel | undefined; // set by the listener: TypeScript cannot see that
    if (answered?.invite_nonce === invite.nonce) return { ...base, given: false, reason: 'already_given' };
    const now = new Date();
    await publishAcked(conn, counselTopic(root, opts.turnId, opts.agent), signCounsel({ invite, agent: opts.agent, as, text: opts.text }, secret, now), true);
    const late = now.toISOString() > invite.deadline;
    audit.append(late ? 'counsel_late' : 'counsel_given', { turn_id: opts.turnId, agent: opts.agent, as, deadline: invite.deadline });
    return { ...base, given: true, as, deadline: invite.deadline, late };
  } finally {
    await closeFleetConnection(conn);
  }
}

/** The roundtable of a turn as the broker holds it now: its invitation and every counsel, on time or late. */
export async function readRoundtable(config: MamConfig, turnId: string, settleMs?: number): Promise<RoundtableResult | undefined> {
  const secret = requireFleetSecret(config);
  const root = agentsRoot(config);
  const audit = new FleetAudit(config.logDir);
  const conn = await openFleetConnection(config, 'roundtable');
  try {
    let invite: Invite | undefined;
    const counsel: Array<{ topic: string; body: Buffer }> = [];
    conn.client.on('message', (topic, body) => {
      if (topic !== inviteTopic(root, turnId)) return void counsel.push({ topic, body });
      const v = verifyInvite(root, topic, body, secret);
      if (v.ok) invite = v.message;
      else if (body.length > 0) audit.append('rejected', { what: 'roundtable_invite', topic, reason: v.reason });
    });
    await subscribeAcked(conn, [inviteTopic(root, turnId), counselFilter(root, turnId)]);
    await settle(settleMs);
    if (!invite) return undefined;
    const received = new Map<string, Counsel>();
    for (const { topic, body } of counsel) acceptCounsel(root, topic, body, secret, invite, received, audit);
    return resultOf(invite, [...received.values()]);
  } finally {
    await closeFleetConnection(conn);
  }
}

export interface Invitation {
  turn_id: string;
  from: string;
  as: string;
  question: string;
  deadline: string;
}

/** Invitations addressed to `agent` that it has not answered and whose deadline has not passed (`mam inbox`). */
export async function openInvitations(config: MamConfig, agent: string, capabilities: readonly string[], settleMs?: number): Promise<Invitation[]> {
  const secret = requireFleetSecret(config);
  const root = agentsRoot(config);
  const conn = await openFleetConnection(config, 'inbox');
  try {
    const invites: Invite[] = [];
    const answered = new Set<string>();
    conn.client.on('message', (topic, body) => {
      const i = verifyInvite(root, topic, body, secret);
      if (i.ok) return void invites.push(i.message);
      const c = verifyCounsel(root, topic, body, secret);
      if (c.ok && c.message.agent === agent) answered.add(c.message.invite_nonce);
    });
    await subscribeAcked(conn, [allInvitesFilter(root), agentCounselFilter(root, agent)]);
    await settle(settleMs);
    const now = new Date().toISOString();
    return invites.flatMap((i) => {
      const as = invitedAs(i, agent, capabilities);
      if (as === undefined || i.from === agent || answered.has(i.nonce) || i.deadline <= now) return [];
      return [{ turn_id: i.turn_id, from: i.from, as, question: i.question, deadline: i.deadline }];
    });
  } finally {
    await closeFleetConnection(conn);
  }
}

/** A counsel that answers this invitation, from an invited agent, the first from each; anything else audited. */
function acceptCounsel(
  root: string,
  topic: string,
  body: Buffer,
  secret: string,
  invite: InviteBody,
  received: Map<string, Counsel>,
  audit: FleetAudit,
): Counsel | undefined {
  if (body.length === 0) return undefined; // a cleared topic
  const v = verifyCounsel(root, topic, body, secret);
  if (!v.ok) return void audit.append('rejected', { what: 'roundtable_counsel', topic, reason: v.reason });
  const c = v.message;
  if (c.turn_id !== invite.turn_id || c.invite_nonce !== invite.nonce) return undefined; // an earlier invitation's
  if (!invite.to.includes(c.as) || (!c.as.startsWith('capability:') && c.as !== c.agent)) {
    return void audit.append('rejected', { what: 'roundtable_counsel', topic, reason: 'not_invited', agent: c.agent });
  }
  if (received.has(c.agent)) return undefined;
  received.set(c.agent, c);
  return c;
}

function resultOf(invite: InviteBody, all: Counsel[]): RoundtableResult {
  const line = (c: Counsel): CounselLine => ({ agent: c.agent, as: c.as, text: c.text, at: c.at });
  const sorted = [...all].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return {
    turn_id: invite.turn_id,
    from: invite.from,
    question: invite.question,
    invited: invite.to,
    deadline: invite.deadline,
    counsel: sorted.filter((c) => c.at <= invite.deadline).map(line),
    late: sorted.filter((c) => c.at > invite.deadline).map(line),
    missing: invite.to.filter((to) => !all.some((c) => c.as === to)),
  };
}

function settle(ms = DEFAULT_SETTLE_MS): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
