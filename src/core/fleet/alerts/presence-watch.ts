import type { MqttClient } from 'mqtt';
import type { MamConfig } from '../../config/config.ts';
import type { Logger } from '../../log.ts';
import { type FleetConnection, closeFleetConnection, openFleetConnection } from '../fleet-client.ts';
import { agentsRoot, allPresenceFilter, requireFleetSecret } from '../fleet-names.ts';
import { type Presence, statusOf, verifyPresence } from '../presence.ts';

export interface PresenceWatchEvents {
  /** `lastCheckIn`: the `last_seen` of the agent's last online presence this watch saw (ISO). */
  offline(agent: string, detail: string, lastCheckIn: string): void;
  rejected(entry: { topic: string; reason: string; agent?: string | undefined }): void;
  log: Logger;
}

interface Known {
  presence: Presence;
  /** Whether an offline (or stale) alert was raised since the agent was last seen online. */
  alerted: boolean;
}

/**
 * The monitor's view of the fleet: its own connection (the job watch's connection is not shared,
 * so the watch's code stays as it is) subscribed to every agent's presence. An agent goes offline
 * when a verified `offline` presence arrives live (its Last Will, or its clean stop) or when its
 * `online` presence grows stale; the retained states read at the first subscription only set the
 * baseline, so starting a monitor does not replay every agent that ever went away.
 */
export class PresenceWatch {
  private readonly root: string;
  private readonly secret: string;
  private readonly known = new Map<string, Known>();
  private conn: FleetConnection | undefined;
  private stopped = false;

  constructor(
    private readonly config: MamConfig,
    private readonly events: PresenceWatchEvents,
  ) {
    this.root = agentsRoot(config);
    this.secret = requireFleetSecret(config);
  }

  start(): void {
    void openFleetConnection(this.config, 'fleet-mon', { reconnect: true })
      .then((conn) => {
        if (this.stopped) return closeFleetConnection(conn);
        this.conn = conn;
        this.listen(conn.client);
        // Subscribed again on each CONNACK (clean sessions): retained states after a reconnect are a baseline too.
        conn.client.on('connect', () => void this.subscribe(conn.client));
        return this.subscribe(conn.client);
      })
      .catch((err: Error) => this.events.log.warn({ err: err.message }, 'presence watch unavailable: no agent_offline alerts'));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await closeFleetConnection(this.conn);
  }

  /** What this watch knows of `agent` now (`stale`: online, but not refreshed for STALE_PERIODS periods); undefined for an agent never seen. */
  agentStatus(agent: string, now = Date.now()): 'online' | 'offline' | 'stale' | undefined {
    const k = this.known.get(agent);
    return k === undefined ? undefined : statusOf(k.presence, now);
  }

  /** Called on the monitor's tick: an online presence not refreshed for STALE_PERIODS periods. */
  checkStale(now = Date.now()): void {
    for (const [agent, k] of this.known) {
      if (k.alerted || k.presence.status !== 'online' || statusOf(k.presence, now) !== 'stale') continue;
      k.alerted = true;
      this.events.offline(agent, `stale: no presence since ${k.presence.last_seen}`, k.presence.last_seen);
    }
  }

  private async subscribe(client: MqttClient): Promise<void> {
    try {
      await client.subscribeAsync(allPresenceFilter(this.root), { qos: 1 });
      // From here on an agent's death is seen live; a script (or a test) that kills one waits for this.
      this.events.log.info({ root: this.root }, 'watching agent presence');
    } catch (err) {
      this.events.log.warn({ err: (err as Error).message }, 'presence subscription failed');
    }
  }

  private listen(client: MqttClient): void {
    client.on('message', (topic, payload, packet) => {
      if (this.stopped || payload.length === 0) return;
      const verdict = verifyPresence(this.root, topic, payload, this.secret);
      if (!verdict.ok) return this.events.rejected({ topic, reason: verdict.reason, agent: verdict.agent });
      const p = verdict.presence;
      const had = this.known.get(p.agent);
      const lastOnline = had?.presence.status === 'online' ? had.presence.last_seen : undefined;
      if (had && had.presence.last_seen > p.last_seen && p.status === had.presence.status) return; // an older copy
      // Live, it is news. Retained, it is news only about an agent this watch knew online: after a
      // reconnect of the watch, an agent that died while it was away shows up as a retained `offline`.
      const wentOffline = p.status === 'offline' && had?.presence.status !== 'offline' && (!packet.retain || had !== undefined);
      // An online copy already alerted as stale (the same last_seen, delivered again on a reconnect) stays alerted.
      const sameStale = p.status === 'online' && had?.alerted === true && had.presence.last_seen === p.last_seen;
      this.known.set(p.agent, { presence: p, alerted: p.status === 'offline' ? (had?.alerted ?? false) || wentOffline || packet.retain : sameStale });
      if (wentOffline && !had?.alerted) {
        this.events.offline(p.agent, p.reason === 'shutdown' ? 'shut down' : 'connection lost (Last Will)', lastOnline ?? p.last_seen);
      }
    });
  }
}
