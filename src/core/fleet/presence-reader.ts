import { randomBytes } from 'node:crypto';
import type { MamConfig } from '../config/config.ts';
import type { Registry } from '../registry/registry.ts';
import { FleetAudit } from './fleet-audit.ts';
import { closeFleetConnection, openFleetConnection, publishAcked, subscribeAcked } from './fleet-client.ts';
import { agentsRoot, allPresenceFilter, requireFleetSecret } from './fleet-names.ts';
import { type AgentStatus, type Presence, statusOf, verifyPresence } from './presence.ts';

export interface AgentRow {
  name: string;
  host: string;
  capabilities: string[];
  status: AgentStatus;
  /** Why an offline agent is offline: `shutdown` or `connection_lost` (its Last Will). */
  reason: string | null;
  last_seen: string;
  since: string;
  /** A running job of the registry whose `agent_session` is this agent's name. */
  current_job: string | null;
}

/** After the fence came back, retained messages still in flight are given this long. */
const QUIET_MS = 150;
/** The whole read never takes longer than this, fence or not. */
const READ_CAP_MS = 5_000;

/**
 * Every agent's retained presence, verified. MQTT has no "end of retained messages", so the reader
 * subscribes, then publishes a fence on a topic of its own and reads until the fence comes back
 * (plus a short quiet time): brokers send the retained messages of a subscription before, or about
 * when, they route a publish made after its SUBACK. Forged messages are audited and left out.
 */
export async function readPresence(config: MamConfig): Promise<Presence[]> {
  const secret = requireFleetSecret(config);
  const root = agentsRoot(config);
  const audit = new FleetAudit(config.logDir);
  const conn = await openFleetConnection(config, 'agents');
  const latest = new Map<string, Presence>();
  const fence = `${root}/_fence/${randomBytes(6).toString('hex')}`;
  try {
    let fenced: () => void = () => undefined;
    const fenceSeen = new Promise<void>((resolve) => (fenced = resolve));
    conn.client.on('message', (topic, payload) => {
      if (topic === fence) return fenced();
      if (payload.length === 0) return; // a cleared retained message
      const verdict = verifyPresence(root, topic, payload, secret);
      if (!verdict.ok) {
        audit.append('rejected', { what: 'presence', topic, reason: verdict.reason, agent: verdict.agent });
        return;
      }
      const p = verdict.presence;
      const had = latest.get(p.agent);
      if (!had || had.last_seen <= p.last_seen) latest.set(p.agent, p);
    });
    await subscribeAcked(conn, [allPresenceFilter(root), fence]);
    await publishAcked(conn, fence, '', false);
    let cap: NodeJS.Timeout | undefined;
    await Promise.race([fenceSeen.then(() => new Promise((r) => setTimeout(r, QUIET_MS))), new Promise((r) => (cap = setTimeout(r, READ_CAP_MS)))]);
    clearTimeout(cap);
  } finally {
    await closeFleetConnection(conn);
  }
  return [...latest.values()].sort((a, b) => (a.agent < b.agent ? -1 : 1));
}

/** The rows of `mam agents`: presence as read now, each with its current job from the registry. */
export function agentRows(presences: Presence[], registry: Registry, nowMs = Date.now()): AgentRow[] {
  const running = registry.list().records.filter((r) => r.status === 'running');
  return presences.map((p) => ({
    name: p.agent,
    host: p.host,
    capabilities: p.capabilities,
    status: statusOf(p, nowMs),
    reason: p.status === 'offline' ? (p.reason ?? null) : null,
    last_seen: p.last_seen,
    since: p.since,
    current_job: running.find((r) => r.agent_session === p.agent)?.job_id ?? null,
  }));
}
