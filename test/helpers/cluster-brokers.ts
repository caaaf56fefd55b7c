import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DOCKER_DIR, type MamUsers, makePassword, rewriteNatsConf } from './docker-brokers.ts';
import { connectPlainClient } from './mqtt-client.ts';
import { freePort } from './free-port.ts';
import { HOST, type ServerTestBroker, requireBinary, startServer } from './server-process.ts';
import { sleep } from './wait.ts';

/**
 * The 3-node NATS cluster of docker/docker-compose.cluster.yaml, started from its very files
 * (docker/nats-cluster/node-N.conf, includes expanded as nats-server expands them) with only the
 * ports, folders and log substituted, as docker-brokers.ts does for the single server. Ready means
 * formed: a JetStream meta leader, every node answering MQTT for the MAM account, and the MQTT
 * streams replicated on all three nodes.
 */
export const CLUSTER_DIR = join(DOCKER_DIR, 'nats-cluster');
export const NODE_COUNT = 3;
/** The streams NATS keeps MQTT in: sessions, QoS 1 messages, retained messages. */
export const MQTT_STREAMS = ['$MQTT_sess', '$MQTT_msgs', '$MQTT_rmsgs'] as const;
const READY_TIMEOUT_MS = 45_000;

export interface ClusterNode extends ServerTestBroker {
  /** `server_name` of the node's config (`mam-nats-1` …). */
  name: string;
  httpPort: number;
  clusterPort: number;
}

export interface NatsCluster {
  nodes: ClusterNode[];
  users: MamUsers;
  /** `MQTT_SERVERS` text listing the nodes in `order` (indexes into `nodes`; default 0, 1, 2). */
  servers(order?: number[]): string;
  /** SIGKILL: a crash, nothing flushed, no leadership handed over. Resolves once the process is gone. */
  kill(index: number): Promise<void>;
  /** Node names leading the meta group and each MQTT stream, asked of a live node. */
  leaders(): Promise<Record<'meta' | (typeof MQTT_STREAMS)[number], string>>;
  /**
   * After a kill: resolves once the live nodes lead the meta group and every MQTT stream, and each
   * live node serves an MQTT round trip again. Until then (RAFT elections take 4-9 s on 2.9) a new
   * MQTT connection hangs 4 s on its session lookup and is closed.
   */
  recovered(timeoutMs?: number): Promise<void>;
  indexOf(name: string): number;
  stop(): Promise<void>;
}

/** Inlines `include "file"` lines, relative to the including file, as nats-server reads them. */
export function expandIncludes(file: string): string {
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => {
      const m = /^\s*include\s+"([^"]+)"\s*$/.exec(line);
      return m ? expandIncludes(join(dirname(file), m[1]!)) : line;
    })
    .join('\n');
}

export async function startNatsCluster(): Promise<NatsCluster> {
  const bin = requireBinary('nats-server');
  const users: MamUsers = {
    agent: { username: 'mam_agent', password: makePassword() },
    observer: { username: 'mam_observer', password: makePassword() },
  };
  const routePassword = makePassword();
  // Routes must name every node before any starts; the other ports are picked per node.
  const clusterPorts = await Promise.all(Array.from({ length: NODE_COUNT }, () => freePort()));
  const env: NodeJS.ProcessEnv = {
    MAM_AGENT_PASSWORD: users.agent.password,
    MAM_OBSERVER_PASSWORD: users.observer.password,
    MAM_SYS_PASSWORD: makePassword(),
    MAM_ROUTE_PASSWORD: routePassword,
  };
  clusterPorts.forEach((p, i) => (env[`MAM_ROUTE_${i + 1}`] = `nats-route://mam_route:${routePassword}@${HOST}:${p}`));
  const start = (i: number): Promise<ClusterNode> => {
    const source = expandIncludes(join(CLUSTER_DIR, `node-${i + 1}.conf`));
    const name = /^server_name:\s*(\S+)/m.exec(source)?.[1] ?? `node-${i + 1}`;
    return startServer(
      { name: 'nats-server', bin, scheme: 'mqtt', portCount: 4, readyLog: /Server is ready/, env },
      (dir, [mqttPort, clientPort, httpPort, wsPort]) =>
        `${rewriteNatsConf(source, {
          listen: `"${HOST}:${clientPort}"`,
          http: `"${HOST}:${httpPort}"`,
          'jetstream.store_dir': `"${join(dir, 'jetstream')}"`,
          'cluster.listen': `"${HOST}:${clusterPorts[i]}"`,
          'mqtt.listen': `"${HOST}:${mqttPort}"`,
          'websocket.listen': `"${HOST}:${wsPort}"`,
        })}\nlog_file: "${join(dir, 'server.log')}"\n`,
      ([, , httpPort]) => ({ name, httpPort: httpPort ?? 0, clusterPort: clusterPorts[i] ?? 0 }),
    );
  };
  const nodes = await Promise.all(Array.from({ length: NODE_COUNT }, (_, i) => start(i)));
  const down = new Set<number>();
  const live = () => nodes.filter((_, i) => !down.has(i));

  const cluster: NatsCluster = {
    nodes,
    users,
    servers: (order = nodes.map((_, i) => i)) => order.map((i) => `${HOST}:${nodes[i]!.port}`).join(','),
    async kill(index) {
      const pid = nodes[index]!.pid;
      if (pid === undefined) throw new Error(`${nodes[index]!.name} is not running`);
      down.add(index);
      process.kill(pid, 'SIGKILL');
      await waitFor(() => !isAlive(pid), 5_000, `${nodes[index]!.name} (pid ${pid}) to die`);
    },
    async leaders() {
      return leadersFrom(live());
    },
    async recovered(timeoutMs = READY_TIMEOUT_MS) {
      const deadline = Date.now() + timeoutMs;
      const names = new Set(live().map((n) => n.name));
      let seen = '';
      await waitFor(
        async () => {
          const l = await leadersFrom(live()).catch((err: Error) => ({ error: err.message }));
          seen = JSON.stringify(l);
          return !('error' in l) && Object.values(l).every((name) => names.has(name));
        },
        timeoutMs,
        () => `live leaders for the meta group and the MQTT streams (seen: ${seen})`,
      );
      for (const node of live()) await mqttRoundTrip(node, users, deadline - Date.now());
    },
    indexOf: (name) => nodes.findIndex((n) => n.name === name),
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
  try {
    await waitUntilFormed(nodes, users);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

async function httpJson(port: number, path: string): Promise<any> {
  const res = await fetch(`http://${HOST}:${port}${path}`, { signal: AbortSignal.timeout(2_000) });
  return res.json();
}

/**
 * A meta leader seen by every node; then one MQTT round trip per node as mam_agent (the first
 * MQTT client of an account on a node is what creates, or looks up, the account's MQTT streams
 * there); then all three streams with a leader and every replica current.
 */
async function waitUntilFormed(nodes: ClusterNode[], users: MamUsers): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const left = () => deadline - Date.now();
  let metaSeen = '';
  await waitFor(
    async () => {
      const metas = await Promise.all(nodes.map((n) => httpJson(n.httpPort, '/jsz').catch((err: Error) => ({ error: err.message }))));
      metaSeen = JSON.stringify(metas.map((m) => m?.meta_cluster ?? m));
      return metas.every((m) => m?.meta_cluster?.leader && m.meta_cluster.cluster_size === nodes.length);
    },
    left(),
    () => `a JetStream meta leader on every node (seen: ${metaSeen})`,
  );
  for (const node of nodes) await mqttRoundTrip(node, users, left());
  // A follower's view of the other replicas is stale (`active: 0`): each stream is judged by its leader.
  let seen = '';
  await waitFor(
    async () => {
      const views = await Promise.all(nodes.map((n) => httpJson(n.httpPort, '/jsz?accounts=true&streams=true').catch(() => undefined)));
      const byNode = new Map(nodes.map((n, i) => [n.name, streamsOf(views[i])]));
      seen = JSON.stringify(Object.fromEntries(MQTT_STREAMS.map((s) => [s, streamsOf(views[0]).get(s)?.leader ?? null])));
      return MQTT_STREAMS.every((s) => {
        const leader = streamsOf(views[0]).get(s)?.leader;
        const c = leader ? byNode.get(leader)?.get(s) : undefined;
        return c?.leader === leader && (c.replicas ?? []).length === nodes.length - 1 && c.replicas.every((r: { current: boolean }) => r.current);
      });
    },
    left(),
    () => `the MQTT streams replicated on ${nodes.length} nodes, each with a leader (leaders seen: ${seen})`,
  );
}

/** QoS 1 to itself through one node, outside the job tree, so that no watcher ever sees it. */
async function mqttRoundTrip(node: ClusterNode, users: MamUsers, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const client = await connectPlainClient(node.url, { ...users.agent, clean: true, reconnectPeriod: 0 });
      try {
        const topic = `mam-probe/${node.name}`;
        const got = new Promise<void>((resolve) => client.on('message', (t) => t === topic && resolve()));
        const trip = async () => {
          // A refused SUBACK rejects; NATS 2.9 may also send none at all while JetStream recovers.
          await client.subscribeAsync(topic, { qos: 1 });
          await client.publishAsync(topic, 'probe', { qos: 1 });
          await got;
        };
        await Promise.race([trip(), sleep(8_000).then(() => Promise.reject(new Error('no round trip within 8 s')))]);
        return;
      } finally {
        await client.endAsync(true);
      }
    } catch (err) {
      // NATS closes an MQTT connection whose JetStream requests time out while streams form.
      if (process.env.MAM_CLUSTER_DEBUG) console.log('probe', node.name, (err as Error).message);
      if (Date.now() > deadline) throw new Error(`${node.name}: no MQTT round trip: ${(err as Error).message}`);
      await sleep(250);
    }
  }
}

function streamsOf(jsz: any): Map<string, any> {
  const out = new Map<string, any>();
  for (const account of jsz?.account_details ?? []) for (const s of account.stream_detail ?? []) out.set(s.name, s.cluster);
  return out;
}

/** Asked of the meta leader: a follower, a restarted one above all, may report stale leaders. */
async function leadersFrom(live: ClusterNode[]): Promise<Record<'meta' | (typeof MQTT_STREAMS)[number], string>> {
  const views = await Promise.all(live.map((n) => httpJson(n.httpPort, '/jsz?accounts=true&streams=true').catch(() => undefined)));
  const meta = views.find((v) => v?.meta_cluster?.leader)?.meta_cluster.leader as string | undefined;
  const view = views[live.findIndex((n) => n.name === meta)];
  if (!meta || !view) throw new Error('no live node is the meta leader');
  const streams = streamsOf(view);
  return {
    meta,
    ...(Object.fromEntries(MQTT_STREAMS.map((s) => [s, streams.get(s)?.leader ?? '?'])) as Record<(typeof MQTT_STREAMS)[number], string>),
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string | (() => string)): Promise<void> {
  const deadline = Date.now() + Math.max(timeoutMs, 0);
  while (!(await check())) {
    if (process.env.MAM_CLUSTER_DEBUG) console.log('waiting for', typeof what === 'string' ? what : what());
    if (Date.now() > deadline) throw new Error(`cluster harness: timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(100);
  }
}
