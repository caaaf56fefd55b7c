import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestBroker, describeWithBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import type { RunResult, Workspace } from '../helpers/cli.ts';
import { runInProcess } from '../helpers/in-process.ts';
import { type NatsCluster, startNatsCluster } from '../helpers/cluster-brokers.ts';
import { fleetWorkspace, jsonOut, stopTurnHoldersAtEnd } from './fleet-fixtures.ts';

/**
 * `mam mentions` (docs/coordination.md): two assistants, ada and bob, on one chat, each on its own
 * host, asking for every message what to do — the seed's walkthrough: a message to one of them, to
 * both, to no one (a turn race over the broker), a thread one of them owns, a person's name.
 */

const ALIASES = 'ada=Ada,Ada Lovelace;bob=Bob';

interface Answer {
  code: number | null;
  action: string;
  rule: string;
  claim: { winner: string } | null;
}

function answerOf(r: RunResult): Answer {
  expect(r.stderr.replace(/^warning: .*\n/gm, '')).toBe('');
  return { code: r.code, ...(jsonOut(r) as Omit<Answer, 'code'>) };
}

function walkthrough(hosts: () => { ada: Workspace; bob: Workspace }, settleMs: number) {
  const ask = async (ws: Workspace, agent: string, message: string, ...args: string[]) =>
    answerOf(
      await runInProcess(
        'mam',
        ['mentions', '--agent', agent, '--broker', '--settle-ms', String(settleMs), '--channel', 'C1', '--message', message, '--epoch', '1718000000', ...args],
        ws,
      ),
    );
  const both = async (message: string, ...args: string[]) => {
    const { ada, bob } = hosts();
    const [a, b] = await Promise.all([ask(ada, 'ada', message, ...args), ask(bob, 'bob', message, ...args)]);
    return { a, b, ada, bob };
  };

  it('a message to one: it responds with no race, the other stays silent (exit 6)', { timeout: 30_000 }, async () => {
    const { a, b } = await both('m1', '--text', '@Ada can you review the parser?');
    expect(a).toMatchObject({ code: 0, action: 'respond', rule: 'only_me_mentioned', claim: null });
    expect(b).toMatchObject({ code: 6, action: 'silent', rule: 'others_mentioned', claim: null });
  });

  it('a message to both: both respond, no claim', { timeout: 30_000 }, async () => {
    const { a, b } = await both('m2', '--text', '@ada and @Bob: what do you each think?');
    expect([a.code, b.code]).toEqual([0, 0]);
    expect([a.rule, b.rule]).toEqual(['several_mentioned_me_among', 'several_mentioned_me_among']);
  });

  it('a message to no one: a turn race over the broker, one responds (0), the other lost (4), same winner', { timeout: 30_000 }, async () => {
    const { a, b, ada, bob } = await both('m3', '--text', 'who can help with the build?');
    stopTurnHoldersAtEnd(ada);
    stopTurnHoldersAtEnd(bob);
    expect([a.code, b.code].sort()).toEqual([0, 4]);
    expect(a.claim?.winner).toBe(b.claim?.winner);
    const [winner, loser] = a.code === 0 ? [a, b] : [b, a];
    expect(winner.action).toBe('respond');
    expect(loser.action).toBe('claim_lost');
  });

  it("a thread ada's parent owns: her replies are hers even when they name bob", { timeout: 30_000 }, async () => {
    const parent = ['--thread-text', '@Ada Lovelace, please own the release notes'];
    const plain = await both('m4', '--text', 'and the changelog?', ...parent);
    expect(plain.a).toMatchObject({ code: 0, rule: 'thread_mine' });
    expect(plain.b).toMatchObject({ code: 6, rule: 'thread_others' });
    const naming = await both('m5', '--text', '@bob do you agree?', ...parent);
    expect(naming.a.code).toBe(0);
    expect(naming.b).toMatchObject({ code: 6, rule: 'thread_others' });
  });

  it("a person's name is no agent's (MAM_AGENT_ALIASES names the fleet): the turn is raced", { timeout: 30_000 }, async () => {
    const { a, b, ada, bob } = await both('m6', '--text', '@alice asked: who takes this?');
    stopTurnHoldersAtEnd(ada);
    stopTurnHoldersAtEnd(bob);
    expect([a.code, b.code].sort()).toEqual([0, 4]);
  });
}

describe('mam mentions: the walkthrough on the embedded broker', () => {
  useBrokerCleanup();
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  walkthrough(
    () => ({ ada: fleetWorkspace(broker.port, { MAM_AGENT_ALIASES: ALIASES }), bob: fleetWorkspace(broker.port, { MAM_AGENT_ALIASES: ALIASES }) }),
    300,
  );

  it('a claim that cannot be decided is a failure (1), never a loss; bad flags are 64', { timeout: 30_000 }, async () => {
    const down = fleetWorkspace(1, { MAM_AGENT_ALIASES: ALIASES });
    const failed = await runInProcess('mam', ['mentions', '--agent', 'ada', '--broker', '--turn', 't-9-9', '--text', 'anyone?'], down);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^ERROR: .+\n$/);
    expect(failed.stdout).toBe('');
    const ws = fleetWorkspace(broker.port);
    expect((await runInProcess('mam', ['mentions', '--agent', 'ada', '--text', 'x'], ws)).code).toBe(64);
    expect((await runInProcess('mam', ['mentions', '--agent', 'a/b', '--turn', 't'], ws)).code).toBe(64);
    expect((await runInProcess('mam', ['mentions', '--agent', 'ada', '--turn', 't', '--channel', 'C'], ws)).code).toBe(64);
  });
});

describeWithBroker('nats-server', 'mam mentions: the walkthrough on the 3-node NATS cluster', () => {
  let cluster: NatsCluster;
  beforeAll(async () => {
    cluster = await startNatsCluster();
  }, 60_000);
  afterAll(() => cluster?.stop());
  const on = (node: number) =>
    fleetWorkspace(cluster.nodes[node]!.port, { MQTT_USERNAME: 'mam_agent', MQTT_PASSWORD: cluster.users.agent.password, MAM_AGENT_ALIASES: ALIASES });
  // ada on node 1, bob on node 3: every bid crosses the cluster.
  walkthrough(() => ({ ada: on(0), bob: on(2) }), 1000);
});
