import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, expect, it, onTestFailed, onTestFinished } from 'vitest';
import { type BinProcess, spawnBin } from '../brokers/bin-process.ts';
import { describeWithBroker } from '../helpers/brokers.ts';
import { makeWorkspace, type RunResult, runBin, runBinAsync, type Workspace } from '../helpers/cli.ts';
import { type NatsCluster, startNatsCluster } from '../helpers/cluster-brokers.ts';
import { waitUntil } from '../helpers/wait.ts';

/**
 * Failover through the 3-node cluster of docker/docker-compose.cluster.yaml, started from its own
 * files (test/helpers/cluster-brokers.ts), with the real bins: a node is SIGKILLed under a running
 * job — the watcher's, then the agent's — and a retained terminal must outlive the node that took
 * it. Each test gets a fresh cluster: one kill leaves two nodes, the least that keeps a quorum.
 *
 * The agent and the watcher have separate workspaces (the record copied at registration): the
 * watcher never sees the agent's disk, so every line it prints came over the broker and no disk
 * fallback can stand in for a lost event.
 */

interface Line {
  job_id: string;
  event: string;
  seq: number;
  detail: string;
  status?: string;
}
/**
 * The line that resolved the job: the terminal event, or its retained state. Retained messages
 * replayed on subscribe come in no particular order (docker/README.md), so either may come first.
 */
const resolvedAs = (l: Line | undefined): string | undefined => (l?.event === 'state' ? l.status : l?.event);
const lines = (stdout: string): Line[] =>
  stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Line);
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);
/** Publishes that may land in the 4-9 s in which the survivors elect new stream leaders. */
const THROUGH_ELECTION = ['--attempts', '6'];

describeWithBroker('nats-server', 'failover across a 3-node NATS cluster', () => {
  let cluster: NatsCluster;
  let agent: Workspace;
  let watcher: Workspace;
  beforeEach(async () => {
    cluster = await startNatsCluster();
    agent = makeWorkspace();
    watcher = makeWorkspace();
  }, 60_000);
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') {
      // What the nodes said about our clients and leaderships: enough to tell a slow election from a bug.
      for (const n of cluster.nodes) {
        const log = existsSync(n.logPath) ? readFileSync(n.logPath, 'utf8').split('\n') : [];
        console.log(
          `--- ${n.name}\n${log
            .filter((l) => /mam-|leader|MQTT/.test(l))
            .slice(-40)
            .join('\n')}`,
        );
      }
    }
    await cluster?.stop();
    agent?.cleanup();
    watcher?.cleanup();
  });

  /** The agent publishes as mam_agent, the watcher reads as mam_observer; each lists the nodes in its own order. */
  const agentEnv = (order: number[]) => ({ MQTT_SERVERS: cluster.servers(order), MQTT_USERNAME: 'mam_agent', MQTT_PASSWORD: cluster.users.agent.password });
  const watcherEnv = (order: number[]) => ({
    MQTT_SERVERS: cluster.servers(order),
    MQTT_USERNAME: 'mam_observer',
    MQTT_PASSWORD: cluster.users.observer.password,
  });

  function registerJob(): string {
    const r = runBin('mam-register', ['--timeout', '150', '--idle-timeout', '90', '--brief', 'failover'], agent, { env: { MQTT_SERVERS: cluster.servers() } });
    expect(r.code, r.stderr).toBe(0);
    const job = (JSON.parse(r.stdout) as { job_id: string }).job_id;
    mkdirSync(path.join(watcher.root, '.mam', 'jobs'), { recursive: true, mode: 0o700 });
    copyFileSync(path.join(agent.root, '.mam', 'jobs', `${job}.json`), path.join(watcher.root, '.mam', 'jobs', `${job}.json`));
    cpSync(path.join(agent.root, '.mam', 'logs'), path.join(watcher.root, '.mam', 'logs'), { recursive: true });
    return job;
  }

  const publish = (job: string, event: string, order: number[], extra: string[] = []): Promise<RunResult> =>
    runBinAsync('mam-publish', ['--job', job, '--event', event, ...extra], agent, { env: agentEnv(order), timeoutMs: 60_000 });

  async function published(job: string, event: string, order: number[], extra: string[] = []): Promise<void> {
    const r = await publish(job, event, order, extra);
    expect(r.code, `mam-publish ${event}: ${r.stderr}`).toBe(0);
  }

  async function watch(job: string, order: number[]): Promise<BinProcess> {
    const sub = spawnBin('mam-subscribe', ['--job', job], watcher, {
      env: { ...watcherEnv(order), ...(process.env.MAM_CLUSTER_DEBUG ? { MAM_LOG_LEVEL: 'debug', DEBUG: 'mqttjs*' } : {}) },
    });
    onTestFailed(() => console.log(`--- watcher stderr\n${sub.stderr}\n--- watcher stdout\n${sub.stdout}`));
    await sub.waitForStderr(/^SUBSCRIBED /m, 30_000);
    return sub;
  }

  const audit = (ws: Workspace, job: string) =>
    readFileSync(path.join(ws.root, '.mam', 'logs', job, 'events.ndjson'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; seq?: number; session_present?: boolean });
  const agentLastSeq = (job: string): number =>
    (JSON.parse(readFileSync(path.join(agent.root, '.mam', 'jobs', `${job}.json`), 'utf8')) as { last_seq: number }).last_seq;

  it("the watcher's node dies: the watcher resumes its session on another node; every event arrives, once", async () => {
    const job = registerJob();
    const sub = await watch(job, [0, 1, 2]);
    const reconnects = () => audit(watcher, job).filter((e) => e.type === 'reconnected');
    for (const event of ['started', 'progress', 'progress']) await published(job, event, [1, 2, 0]);
    expect(await waitUntil(() => lines(sub.stdout).length === 3, 15_000)).toBe(true);
    const before = reconnects().length;

    // Frozen, the watcher cannot reconnect before the next two events are out: they can only reach
    // it through its session, queued in the replicated streams while it is cut off.
    sub.kill('SIGSTOP');
    try {
      await cluster.kill(0);
      for (const event of ['progress', 'progress']) await published(job, event, [1, 2, 0], THROUGH_ELECTION);
    } finally {
      sub.kill('SIGCONT');
    }
    expect(await waitUntil(() => reconnects().length > before, 45_000)).toBe(true);
    // The session (its subscriptions and queued QoS 1 events) lives in the replicated streams.
    expect(reconnects().at(-1)?.session_present).toBe(true);
    // Nothing lost: the two events published during the failover arrive, before the terminal is sent.
    expect(await waitUntil(() => lines(sub.stdout).length >= 5, 30_000)).toBe(true);
    await published(job, 'completed', [1, 2, 0], THROUGH_ELECTION);

    const r = await sub.result;
    expect(r.code, r.stderr).toBe(0);
    const got = lines(r.stdout);
    // Nothing twice, in order: the resumed session's redeliveries were dropped as duplicates.
    expect(got.map((l) => l.seq)).toEqual(range(6));
    expect(resolvedAs(got.at(-1))).toBe('completed');
  }, 120_000);

  it("the agent's node dies: the heartbeat timer fails over, the publisher tries the next server, nothing is lost or doubled", async () => {
    const job = registerJob();
    const sub = await watch(job, [0, 1, 2]);
    const beats = () => lines(sub.stdout).filter((l) => l.detail === 'heartbeat');
    // The agent: a process the timer watches (its end stops the timer, contract §5).
    const agentProc = spawn('sleep', ['600'], { stdio: 'ignore' });
    onTestFinished(() => {
      agentProc.kill('SIGKILL');
    });
    // The agent's node is node 1: first in its list, so the publisher and the timer connect there.
    await published(job, 'started', [1, 2, 0], ['--heartbeat', '1', '--watch-pid', String(agentProc.pid)]);
    expect(await waitUntil(() => beats().length >= 2, 15_000)).toBe(true);

    await cluster.kill(1);
    const beatsAtKill = beats().length;
    // The timer's one connection goes to the next server: beats resume once the cluster has re-elected.
    expect(await waitUntil(() => beats().length >= beatsAtKill + 2, 45_000)).toBe(true);
    await cluster.recovered();
    // Node 1 is still first in the agent's list: the first try is refused, the second goes to node 2.
    const t0 = Date.now();
    const r = await publish(job, 'progress', [1, 2, 0], ['--detail', 'after the kill']);
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500); // the contract's first back-off: it did retry
    expect(await waitUntil(() => lines(sub.stdout).some((l) => l.detail === 'after the kill'), 15_000)).toBe(true);
    // The agent ends; its timer stops within a period. Then every seq committed so far must have
    // arrived — beats skipped while cut off took none — before the terminal could end the watch.
    agentProc.kill('SIGKILL');
    const pidFile = path.join(agent.root, '.mam', 'jobs', `${job}.heartbeat.pid`);
    expect(await waitUntil(() => !existsSync(pidFile), 15_000)).toBe(true);
    const committed = agentLastSeq(job);
    expect(await waitUntil(() => new Set(lines(sub.stdout).map((l) => l.seq)).size >= committed, 30_000)).toBe(true);
    await published(job, 'completed', [1, 2, 0]);

    const done = await sub.result;
    expect(done.code, done.stderr).toBe(0);
    const seqs = lines(done.stdout).map((l) => l.seq);
    // Every seq the agent committed arrived, each once (wire order is not seq order: sorted).
    expect([...seqs].sort((a, b) => a - b)).toEqual(range(committed + 1));
    expect(resolvedAs(lines(done.stdout).find((l) => l.seq === committed + 1))).toBe('completed');
  }, 120_000);

  it('a retained terminal survives the loss of the node that took it and of its stream leader', async () => {
    const job = registerJob();
    await published(job, 'started', [1, 2, 0]);
    await published(job, 'completed', [1, 2, 0]);
    // The retained copy's authority is the $MQTT_rmsgs leader: kill that node, unless it is node 1, which took the publish.
    const { $MQTT_rmsgs: leader } = await cluster.leaders();
    const doomed = cluster.indexOf(leader) === -1 ? 1 : cluster.indexOf(leader);
    await cluster.kill(doomed);
    await cluster.recovered();
    // A watcher that starts now, on a survivor, with a registry that still says `pending`.
    const survivors = [0, 1, 2].filter((i) => i !== doomed);
    const sub = await watch(job, survivors);
    const r = await sub.result;
    expect(r.code, r.stderr).toBe(0);
    // Resolved by the broker alone, printed once although the event and the state are both retained.
    const got = lines(r.stdout);
    expect(got.map((l) => [resolvedAs(l), l.seq])).toEqual([['completed', 2]]);
  }, 120_000);
  it('two of three nodes lost (no quorum): a publish is not delivered, in bounded time, and the disk stays right', async () => {
    const job = registerJob();
    await published(job, 'started', [1, 2, 0]);
    const seqBefore = agentLastSeq(job);
    await cluster.kill(1);
    await cluster.kill(2);
    // The survivor accepts TCP but cannot look an MQTT session up without a JetStream quorum: each
    // try fails (a closed connection or no CONNACK), and the contract's attempts bound the whole.
    const t0 = Date.now();
    const r = await publish(job, 'progress', [0, 1, 2], ['--attempts', '3', '--detail', 'no quorum']);
    const took = Date.now() - t0;
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^ERROR: /m);
    expect(took).toBeLessThan(40_000);
    // Recorded on the agent's disk (the audit and the seq), so nothing is lost when the fleet comes back.
    expect(agentLastSeq(job)).toBe(seqBefore + 1);
    expect(audit(agent, job).some((e) => e.seq === seqBefore + 1)).toBe(true);
  }, 120_000);
});
