import { randomBytes } from 'node:crypto';
import type { MamConfig } from '../config/config.ts';
import type { Logger } from '../log.ts';
import { writeJsonAtomic } from '../registry/record-store.ts';
import { agentCardPath } from './agent-card.ts';
import { FleetAudit } from './fleet-audit.ts';
import { type FleetConnection, closeFleetConnection, openFleetConnection, publishAcked } from './fleet-client.ts';
import { agentsRoot, presenceTopic, requireFleetSecret } from './fleet-names.ts';
import { signPresence, verifyPresence } from './presence.ts';

export interface AgentUpOptions {
  name: string;
  host: string;
  capabilities: string[];
  refreshSec: number;
  log: Logger;
  /** Each time the agent is (again) online on the broker. */
  onOnline?: (broker: string) => void;
}

/** The clean stop's offline presence is waited for this long at most: a dead broker must not hold SIGTERM up. */
const SHUTDOWN_PUBLISH_MS = 3_000;

/**
 * `mam agent up` (docs/coordination-reference.md, "Agents and presence"): one long-lived connection
 * whose Last Will is a signed, retained `offline` presence, so the broker marks the agent offline
 * the moment the connection dies (a SIGKILL, a lost host) without anyone waiting for `last_seen` to
 * grow old. While connected it re-publishes its retained `online` presence every `refreshSec`; a
 * clean stop publishes `offline` itself and disconnects cleanly, which discards the will.
 */
export class AgentPresence {
  private readonly secret: string;
  private readonly root: string;
  private readonly topic: string;
  private readonly since = new Date().toISOString();
  private conn: FleetConnection | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  /** Names the current connection in every presence it writes (its will too): see onOwnPresence. */
  private session = '';

  constructor(
    private readonly config: MamConfig,
    private readonly opts: AgentUpOptions,
    private readonly registryDir: string,
  ) {
    this.secret = requireFleetSecret(config);
    this.root = agentsRoot(config);
    this.topic = presenceTopic(this.root, opts.name);
  }

  async run(stop: Promise<unknown>): Promise<void> {
    await this.writeCard();
    const opening = openFleetConnection(this.config, `agent-${this.opts.name}`, { will: this.will(), reconnect: true });
    this.opts.log.info({ agent: this.opts.name }, 'connecting to the broker');
    // With a broker that is down MQTT.js retries forever: a SIGTERM meanwhile must still end the
    // command (it never was online, so there is nothing to retract).
    const first = await Promise.race([opening, stop.then(() => undefined)]);
    if (first === undefined) {
      void opening.then(closeFleetConnection, () => undefined);
      return;
    }
    this.conn = first;
    const { client } = this.conn;
    // The will is signed when a connection is made: each reconnect carries a fresh one.
    client.on('reconnect', () => {
      client.options.will = this.will();
    });
    client.on('connect', () => void this.announce());
    client.on('message', (topic, payload, packet) => this.onOwnPresence(topic, payload, packet.retain));
    client.on('error', (err) => this.opts.log.debug({ err: err.message }, 'connection error'));
    await this.announce();
    this.refreshTimer = setInterval(() => void this.publish('online'), this.opts.refreshSec * 1000);
    await stop;
    await this.shutdown();
  }

  private will() {
    this.session = randomBytes(6).toString('hex');
    const payload = this.sign('offline', 'connection_lost');
    return { topic: this.topic, payload: Buffer.from(payload), qos: 1 as const, retain: true };
  }

  private sign(status: 'online' | 'offline', reason?: string): string {
    const { name, host, capabilities, refreshSec } = this.opts;
    return signPresence({ agent: name, host, capabilities, status, reason, since: this.since, refreshSec, session: this.session }, this.secret);
  }

  private async announce(): Promise<void> {
    if (!this.conn || this.stopping) return;
    try {
      // Subscribed to its own topic: another writer's `offline` for this name (an old connection's
      // will delivered late, a twin that stopped) is answered at once with `online` again.
      await this.conn.client.subscribeAsync(this.topic, { qos: 1 });
      await this.publish('online');
      this.opts.onOnline?.(this.conn.broker);
    } catch (err) {
      this.opts.log.warn({ err: (err as Error).message }, 'presence not published; retried on the next connection');
    }
  }

  private onOwnPresence(topic: string, payload: Buffer, retained: boolean): void {
    if (this.stopping || retained || topic !== this.topic) return;
    // A clear or a forgery has replaced our retained presence, and readers drop both: without an
    // answer the agent would vanish from `mam agents` until its next refresh (issue 27).
    if (payload.length === 0) {
      void this.publish('online');
      return;
    }
    const verdict = verifyPresence(this.root, topic, payload, this.secret);
    if (!verdict.ok) {
      new FleetAudit(this.config.logDir).append('rejected', { what: 'presence', topic, reason: verdict.reason, agent: verdict.agent });
      void this.publish('online');
      return;
    }
    // Our own clean-stop `offline` carries this connection's session; any other `offline` (a will of
    // a connection the broker dropped late, a twin that stopped) is answered with `online`.
    if (verdict.presence.status === 'offline' && verdict.presence.session !== this.session) void this.publish('online');
  }

  private async publish(status: 'online' | 'offline', reason?: string): Promise<void> {
    if (!this.conn?.client.connected) return;
    try {
      await publishAcked(this.conn, this.topic, this.sign(status, reason), true);
    } catch (err) {
      this.opts.log.debug({ err: (err as Error).message }, 'presence publish failed');
    }
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.refreshTimer);
    // Published before `stopping` is set, then everything else stops: no refresh can follow it.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.publish('offline', 'shutdown'), new Promise((r) => (timer = setTimeout(r, SHUTDOWN_PUBLISH_MS)))]);
    clearTimeout(timer);
    this.stopping = true;
    await closeFleetConnection(this.conn);
  }

  /** `<registry>/agents/<name>.json`: this host's record of the agent, for `mam inbox`'s capabilities. */
  private async writeCard(): Promise<void> {
    const { name, host, capabilities } = this.opts;
    await writeJsonAtomic(agentCardPath(this.registryDir, name), { name, host, capabilities, updated_at: new Date().toISOString() });
  }
}
