import { randomBytes } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { isAlive } from '../../src/core/heartbeat/proc.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { bidRank, holderOf, signBid, signDecision, verifyBid } from '../../src/core/fleet/turn-bids.ts';
import { describeWithBroker, startMosquitto } from '../helpers/brokers.ts';
import { type RunResult, type Workspace, runBinAsync } from '../helpers/cli.ts';
import { type NatsCluster, startNatsCluster } from '../helpers/cluster-brokers.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { sleep, waitUntil } from '../helpers/wait.ts';
import { deadPort } from '../publisher/publish-fixtures.ts';
import { claimTurnOverBroker } from '../../src/core/fleet/turn-claim-broker.ts';
import { SECRET, configOf, fleetAudit, fleetWorkspace, jsonOut, stopTurnHoldersAtEnd } from './fleet-fixtures.ts';

/**
 * Issue 24: a turn has one winner even against a broker client without the fleet secret, who can
 * clear (an empty retained publish) or overwrite (a forged or unsigned bid) the winner's retained
 * bid. ada wins; the attacker strikes; bob, who ranks first for the turn (so that on the old code a
 * cleared ada always lost to him), must then exit 4 naming ada. The attacker, ada and bob each
 * have their own connection — on the cluster, each its own node.
 */

const BIDS = 'python/mqtt/agents/turns';
const bidTopicOf = (turn: string, agent: string) => `${BIDS}/${turn}/${agent}`;

/** A turn id for which `first` ranks before `second`: a plain rank comparison would crown `first`. */
function turnWhereFirst(first: string, second: string, tag: string): string {
  for (;;) {
    const turn = `${tag}-${randomBytes(4).toString('hex')}-1`;
    if (bidRank(turn, first) < bidRank(turn, second)) return turn;
  }
}

const claim = (ws: Workspace, turn: string, agent: string, ttl = 30): Promise<RunResult> =>
  runBinAsync('mam', ['claim', '--broker', '--settle-ms', '300', '--ttl', String(ttl), '--turn', turn, '--agent', agent], ws);

describe('who holds a turn (holderOf)', () => {
  it('a decided bid outranks an undecided one that ranks first; among undecided bids, the lowest rank', () => {
    const turn = turnWhereFirst('bob', 'ada', 'rank');
    const parse = (payload: string, agent: string) => {
      const v = verifyBid({ turnId: turn, agent }, Buffer.from(payload), SECRET);
      if (!v.ok) throw new Error(v.reason);
      return v.bid;
    };
    const ada = parse(signBid(turn, 'ada', 60, SECRET).payload, 'ada');
    const bob = parse(signBid(turn, 'bob', 60, SECRET).payload, 'bob');
    expect(holderOf(turn, [ada, bob])?.agent).toBe('bob');
    const adaDecided = parse(signDecision(ada, SECRET), 'ada');
    expect(adaDecided).toMatchObject({ decided: true, nonce: ada.nonce, expires_at: ada.expires_at });
    expect(holderOf(turn, [adaDecided, bob])?.agent).toBe('ada');
  });
});

describe('mam claim exit codes', () => {
  it('1 when the broker cannot be reached (a failure, never a loss): an ERROR line, nothing on stdout', async () => {
    const ws = fleetWorkspace(await deadPort());
    const r = await claim(ws, 'exit-1-1', 'ada');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^ERROR: /);
  });
});

interface Arena {
  /** ada's and bob's workspaces (one host each). */
  workspaces(): [Workspace, Workspace];
  /** A client with broker credentials but without the fleet secret. */
  attacker(): Promise<MqttClient>;
}

/**
 * `stormMs`: the pause between two clears of the storm. Every retained publish on NATS is a
 * JetStream write replicated to 3 nodes (and the holder answers each with one more): at 10 ms the
 * loaded test machine's cluster fell behind and refused the next test's connections.
 */
function hostileTests(arena: () => Arena, stormMs: number): void {
  async function adaWins(tag: string): Promise<{ turn: string; ada: Workspace; bob: Workspace; attacker: MqttClient }> {
    const [ada, bob] = arena().workspaces();
    const turn = turnWhereFirst('bob', 'ada', tag);
    const won = await claim(ada, turn, 'ada');
    expect(won.code, won.stderr).toBe(0);
    expect(stopTurnHoldersAtEnd(ada)).toHaveLength(1);
    const attacker = await arena().attacker();
    onTestFinished(() => attacker.endAsync(true));
    return { turn, ada, bob, attacker };
  }

  it('the winner’s bid cleared by an empty retained publish: a later claimant still loses (exit 4), and the holder put the bid back', async () => {
    const { turn, ada, bob, attacker } = await adaWins('clear');
    await attacker.publishAsync(bidTopicOf(turn, 'ada'), '', { qos: 1, retain: true });
    const lost = await claim(bob, turn, 'bob');
    expect(lost.code, lost.stdout + lost.stderr).toBe(4);
    expect(jsonOut(lost)).toMatchObject({ won: false, winner: 'ada' });
    expect(fleetAudit(ada)).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'turn_restored', reason: 'cleared', by: 'holder' })]));
  });

  it(`clears every ${stormMs} ms while the later claimant runs (its fence sees nothing, it bids): it defers to the restored decided bid`, async () => {
    const { turn, ada, bob, attacker } = await adaWins('storm');
    let storming = true;
    let clears = 0;
    const stormStart = Date.now();
    const storm = (async () => {
      while (storming) {
        await attacker.publishAsync(bidTopicOf(turn, 'ada'), '', { qos: 1, retain: true });
        clears++;
        await sleep(stormMs);
      }
    })();
    const lost = await claim(bob, turn, 'bob');
    storming = false;
    await storm;
    expect(lost.code, lost.stdout + lost.stderr).toBe(4);
    expect(jsonOut(lost)).toMatchObject({ won: false, winner: 'ada' });
    expect(fleetAudit(bob)).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'claim_lost', winner: 'ada', decided: true })]));
    // The holder's audit folds a flood into at most a line a second: the attacker cannot fill a disk.
    const restores = fleetAudit(ada).filter((e) => e.type === 'turn_restored');
    expect(restores.length).toBeGreaterThan(0);
    expect(restores.length).toBeLessThanOrEqual(Math.ceil((Date.now() - stormStart) / 1000) + 1);
    expect(restores.length).toBeLessThan(clears);
  });

  it('the clear slips past the later claimant’s fence (holder paused until it has bid): the restore, seen within its settle window, still wins', async () => {
    const { turn, ada, bob, attacker } = await adaWins('paused');
    const [holder] = stopTurnHoldersAtEnd(ada);
    process.kill(holder!, 'SIGSTOP');
    onTestFinished(() => void process.kill(holder!, 'SIGCONT'));
    await attacker.publishAsync(bidTopicOf(turn, 'ada'), '', { qos: 1, retain: true });
    await attacker.subscribeAsync(bidTopicOf(turn, 'bob'), { qos: 1 });
    const bobBid = new Promise<void>((resolve) =>
      attacker.on('message', (topic, payload) => topic === bidTopicOf(turn, 'bob') && payload.length > 0 && resolve()),
    );
    const lost = claimTurnOverBroker(configOf(bob), { turnId: turn, agent: 'bob', ttlSec: 30, settleMs: 1_000, hold: false });
    // bob's bid on the broker proves that its fence found the turn empty: it is in the race now.
    await bobBid;
    process.kill(holder!, 'SIGCONT');
    expect(await lost).toMatchObject({ won: false, winner: 'ada' });
    expect(fleetAudit(bob)).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'claim_lost', bid: true, decided: true })]));
  });

  it('the winner’s bid overwritten by forged and unsigned bids that are earlier and "decided": a later claimant still loses (exit 4)', async () => {
    const { turn, ada, bob, attacker } = await adaWins('forged');
    const earlier = new Date(Date.now() - 10_000);
    const forged = JSON.parse(signBid(turn, 'ada', 60, 'not-the-secret', earlier).payload) as Record<string, unknown>;
    await attacker.publishAsync(bidTopicOf(turn, 'ada'), wireJson({ ...forged, decided: true }), { qos: 1, retain: true });
    // Unsigned, on a topic of its own: ranks or times must not matter, only the signature.
    const unsigned = { ...(JSON.parse(signBid(turn, 'mallory', 60, SECRET, earlier).payload) as Record<string, unknown>), decided: true, data: {} };
    await attacker.publishAsync(bidTopicOf(turn, 'mallory'), wireJson(unsigned), { qos: 1, retain: true });
    const lost = await claim(bob, turn, 'bob');
    expect(lost.code, lost.stdout + lost.stderr).toBe(4);
    expect(jsonOut(lost)).toMatchObject({ won: false, winner: 'ada' });
    expect(fleetAudit(ada)).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'turn_restored', reason: 'replaced' })]));
    expect(fleetAudit(bob)).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'rejected', what: 'turn_bid', reason: 'schema' })]));
  });
}

describeWithBroker('mosquitto', 'a turn claim against a hostile client (mosquitto)', () => {
  let url = '';
  let port = 0;
  beforeAll(async () => {
    const broker = await startMosquitto();
    url = broker.url;
    port = broker.port;
  });
  hostileTests(
    () => ({
      workspaces: () => [fleetWorkspace(port), fleetWorkspace(port)],
      attacker: () => connectPlainClient(url),
    }),
    10,
  );

  it('the holder ends at the TTL: no process outlives its claim', async () => {
    const ws = fleetWorkspace(port);
    const won = await claim(ws, `ttl-${randomBytes(4).toString('hex')}-1`, 'ada', 2);
    expect(won.code).toBe(0);
    const [pid] = stopTurnHoldersAtEnd(ws);
    const alive = () => isAlive(pid!);
    expect(alive()).toBe(true);
    expect(await waitUntil(() => !alive(), 6_000)).toBe(true);
  });
});

describeWithBroker('nats-server', 'a turn claim against a hostile client (3-node NATS cluster)', () => {
  let cluster: NatsCluster;
  beforeAll(async () => {
    cluster = await startNatsCluster();
  }, 60_000);
  afterAll(() => cluster?.stop());
  const on = (node: number) => fleetWorkspace(cluster.nodes[node]!.port, { MQTT_USERNAME: 'mam_agent', MQTT_PASSWORD: cluster.users.agent.password });
  hostileTests(
    () => ({
      // ada on node 1, bob on node 3, the attacker on node 2: every message crosses the cluster.
      workspaces: () => [on(0), on(2)],
      attacker: () => connectPlainClient(cluster.nodes[1]!.url, { ...cluster.users.agent }),
    }),
    50,
  );
});
