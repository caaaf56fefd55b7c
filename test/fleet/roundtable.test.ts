import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counselTopic, signCounsel } from '../../src/core/fleet/roundtable-messages.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { type TestBroker, describeWithBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import type { RunResult, Workspace } from '../helpers/cli.ts';
import { runInProcess } from '../helpers/in-process.ts';
import { type NatsCluster, startNatsCluster } from '../helpers/cluster-brokers.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { waitUntil } from '../helpers/wait.ts';
import { SECRET, fleetAudit, fleetWorkspace, jsonOut } from './fleet-fixtures.ts';

/**
 * The roundtable (docs/coordination-reference.md, "The roundtable"): the claimant of a turn invites
 * counsel, each invited agent answers once, the claimant gets back what arrived by the deadline.
 * Two and three agents, one silent, one late, one away (its inbox), forged counsel refused.
 */

interface Table {
  turn_id: string;
  from: string;
  question: string;
  counsel: Array<{ agent: string; as: string; text: string }>;
  late: Array<{ agent: string; text: string }>;
  missing: string[];
}

const turnId = () => `C1-${randomBytes(4).toString('hex')}-1718000000`;

function roundtable(hosts: () => Workspace[], label: string) {
  const ask = (ws: Workspace, turn: string, to: string[], deadline: number) =>
    runInProcess(
      'mam',
      ['roundtable', 'ask', '--turn', turn, '--agent', 'ada', ...to.flatMap((t) => ['--to', t]), '--question', 'which parser?', '--deadline', String(deadline)],
      ws,
      {
        timeoutMs: 60_000,
      },
    );
  const counsel = (ws: Workspace, turn: string, agent: string, text: string, ...args: string[]) =>
    runInProcess('mam', ['roundtable', 'counsel', '--turn', turn, '--agent', agent, '--text', text, ...args], ws);
  const invited = (ws: Workspace, turn: string) => waitUntil(() => fleetAudit(ws).some((e) => e.type === 'roundtable_invited' && e.turn_id === turn), 10_000);
  const ok = (r: RunResult, code = 0) => expect(r.code, r.stderr).toBe(code);

  it(`${label}: two agents — bob's counsel comes back to ada before the deadline, once`, { timeout: 60_000 }, async () => {
    const [ada, bob] = hosts();
    const turn = turnId();
    const started = Date.now();
    const asking = ask(ada!, turn, ['bob'], 30);
    expect(await invited(ada!, turn)).toBe(true);
    ok(await counsel(bob!, turn, 'bob', 'the hand-written one: it reports positions'));
    const r = await asking;
    ok(r);
    // Everyone named answered: no wait for the 30 s deadline.
    expect(Date.now() - started).toBeLessThan(20_000);
    const table = jsonOut(r) as Table;
    expect(table).toMatchObject({ turn_id: turn, from: 'ada', question: 'which parser?', late: [], missing: [] });
    expect(table.counsel).toEqual([{ agent: 'bob', as: 'bob', text: 'the hand-written one: it reports positions', at: expect.any(String) }]);
    // Once: a second counsel is refused (5), and the first stands.
    const again = await counsel(bob!, turn, 'bob', 'changed my mind');
    ok(again, 5);
    expect(jsonOut(again)).toMatchObject({ given: false, reason: 'already_given' });
    const shown = jsonOut(await runInProcess('mam', ['roundtable', 'show', '--turn', turn], ada!)) as Table;
    expect(shown.counsel.map((c) => c.text)).toEqual(['the hand-written one: it reports positions']);
  });

  it(`${label}: three agents — one silent (missing), one late (recorded, not on time); the uninvited refused`, { timeout: 60_000 }, async () => {
    const [ada, bob, cy] = hosts();
    const turn = turnId();
    const asking = ask(ada!, turn, ['bob', 'cy'], 3);
    expect(await invited(ada!, turn)).toBe(true);
    ok(await counsel(bob!, turn, 'bob', 'bob says A'));
    const uninvited = await counsel(cy!, turn, 'dan', 'dan was not asked');
    ok(uninvited, 4);
    expect(jsonOut(uninvited)).toMatchObject({ given: false, reason: 'not_invited' });
    const table = jsonOut(await asking) as Table;
    expect(table.counsel.map((c) => c.agent)).toEqual(['bob']);
    expect(table.missing).toEqual(['cy']);
    // cy, after the deadline: given, but late.
    const late = await counsel(cy!, turn, 'cy', 'cy says B, late');
    ok(late);
    expect(jsonOut(late)).toMatchObject({ given: true, late: true });
    expect(late.stderr).toMatch(/^warning: counsel after the deadline/m);
    const shown = jsonOut(await runInProcess('mam', ['roundtable', 'show', '--turn', turn], ada!)) as Table;
    expect(shown.counsel.map((c) => c.agent)).toEqual(['bob']);
    expect(shown.late.map((c) => c.agent)).toEqual(['cy']);
    expect(shown.missing).toEqual([]);
  });
}

describe('mam roundtable on the embedded broker', () => {
  useBrokerCleanup();
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  const hosts = () => [fleetWorkspace(broker.port), fleetWorkspace(broker.port), fleetWorkspace(broker.port)];
  roundtable(hosts, 'embedded');

  it('an agent that was away finds the invitation in its inbox until it answers; by capability too', { timeout: 60_000 }, async () => {
    const [ada, bob] = hosts();
    const turn = turnId();
    const asking = runInProcess(
      'mam',
      ['roundtable', 'ask', '--turn', turn, '--agent', 'ada', '--to', 'capability:review', '--question', 'is this safe?\nlong context', '--deadline', '6'],
      ada!,
      { timeoutMs: 30_000 },
    );
    expect(await waitUntil(() => fleetAudit(ada!).some((e) => e.type === 'roundtable_invited'), 10_000)).toBe(true);
    const inbox = async () => jsonOut(await runInProcess('mam', ['inbox', '--agent', 'bob', '--capabilities', 'review,ts'], bob!)).invitations;
    expect(await inbox()).toEqual([
      { turn_id: turn, from: 'ada', as: 'capability:review', question: 'is this safe?\nlong context', deadline: expect.any(String) },
    ]);
    const text = await runInProcess('mam', ['inbox', '--agent', 'bob', '--capabilities', 'review', '--text'], bob!);
    expect(text.stdout).toContain(`- roundtable: ada asks for your counsel on turn ${turn} by `);
    expect(text.stdout).toContain(`is this safe? — answer with: mam roundtable counsel --turn ${turn} --agent bob --text "…"`);
    // Not one of its capabilities: no invitation, and counsel is refused.
    expect(jsonOut(await runInProcess('mam', ['inbox', '--agent', 'cy', '--capabilities', 'docs'], bob!)).invitations).toEqual([]);
    expect((await runInProcess('mam', ['roundtable', 'counsel', '--turn', turn, '--agent', 'cy', '--capabilities', 'docs', '--text', 'x'], bob!)).code).toBe(4);
    const given = await runInProcess('mam', ['roundtable', 'counsel', '--turn', turn, '--agent', 'bob', '--capabilities', 'review', '--text', 'safe'], bob!);
    expect(given.code, given.stderr).toBe(0);
    expect(await inbox()).toEqual([]);
    const table = jsonOut(await asking) as Table;
    expect(table.counsel).toEqual([{ agent: 'bob', as: 'capability:review', text: 'safe', at: expect.any(String) }]);
    expect(table.missing).toEqual([]);
  });

  it('forged counsel — another key, unsigned, on another agent’s topic, to an earlier invitation — is refused and audited', { timeout: 60_000 }, async () => {
    const [ada] = hosts();
    const turn = turnId();
    const asking = runInProcess('mam', ['roundtable', 'ask', '--turn', turn, '--agent', 'ada', '--to', 'bob', '--question', 'q', '--deadline', '3'], ada!, {
      timeoutMs: 30_000,
    });
    expect(await waitUntil(() => fleetAudit(ada!).some((e) => e.type === 'roundtable_invited'), 10_000)).toBe(true);
    const attacker = await connectPlainClient(broker.url);
    const root = 'python/mqtt/agents';
    const invite = {
      turn_id: turn,
      from: 'ada',
      to: ['bob'],
      question: 'q',
      at: new Date().toISOString(),
      deadline: new Date(Date.now() + 60_000).toISOString(),
      nonce: 'n0',
    };
    const shown =
      (await attacker.subscribeAsync(`${root}/roundtable/${turn}/invite`, { qos: 1 }),
      await new Promise<Buffer>((r) => attacker.once('message', (_t, p) => r(p))));
    const real = JSON.parse(shown.toString()) as typeof invite;
    const forged = [
      signCounsel({ invite: real, agent: 'bob', as: 'bob', text: 'forged: other key' }, 'not-the-fleet-secret'),
      wireJson({
        schema_version: 1,
        event: 'roundtable_counsel',
        turn_id: turn,
        agent: 'bob',
        as: 'bob',
        invite_nonce: real.nonce,
        text: 'forged: unsigned',
        at: new Date().toISOString(),
        data: {},
      }),
      // Signed with the fleet secret, but an answer to an earlier invitation of the same turn: not counsel on this one.
      signCounsel({ invite, agent: 'bob', as: 'bob', text: 'stale: an earlier invitation' }, SECRET),
    ];
    for (const p of forged) await attacker.publishAsync(counselTopic(root, turn, 'bob'), p, { qos: 1 });
    // Genuine bob counsel replayed onto cy's topic.
    await attacker.publishAsync(counselTopic(root, turn, 'cy'), signCounsel({ invite: real, agent: 'bob', as: 'bob', text: 'misplaced' }, SECRET), { qos: 1 });
    await attacker.endAsync();
    const table = jsonOut(await asking) as Table;
    expect(table.counsel).toEqual([]);
    expect(table.missing).toEqual(['bob']);
    const rejected = fleetAudit(ada!).filter((e) => e.type === 'rejected' && e.what === 'roundtable_counsel');
    // Another key: hmac; unsigned (no hmac_sig): schema; another agent's topic: topic.
    expect(rejected.map((e) => e.reason).sort()).toEqual(['hmac', 'schema', 'topic']);
  });

  it('bad flags are 64; no invitation is 4; no roundtable to show is 66', { timeout: 30_000 }, async () => {
    const [ada] = hosts();
    const turn = turnId();
    expect((await runInProcess('mam', ['roundtable', 'ask', '--turn', turn, '--agent', 'ada', '--question', 'q'], ada!)).code).toBe(64);
    expect((await runInProcess('mam', ['roundtable', 'ask', '--turn', turn, '--agent', 'ada', '--to', 'ada', '--question', 'q'], ada!)).code).toBe(64);
    expect((await runInProcess('mam', ['roundtable', 'counsel', '--turn', turn, '--agent', 'bob', '--text', '  '], ada!)).code).toBe(64);
    const none = await runInProcess('mam', ['roundtable', 'counsel', '--turn', turn, '--agent', 'bob', '--text', 'x'], ada!);
    expect(none.code).toBe(4);
    expect(jsonOut(none)).toMatchObject({ given: false, reason: 'no_invitation' });
    const show = await runInProcess('mam', ['roundtable', 'show', '--turn', turn], ada!);
    expect(show.code).toBe(66);
    expect(show.stderr).toBe(`ERROR: no roundtable for turn ${turn}\n`);
  });
});

describeWithBroker('nats-server', 'mam roundtable on the 3-node NATS cluster', () => {
  let cluster: NatsCluster;
  beforeAll(async () => {
    cluster = await startNatsCluster();
  }, 60_000);
  afterAll(() => cluster?.stop());
  const on = (node: number) => fleetWorkspace(cluster.nodes[node]!.port, { MQTT_USERNAME: 'mam_agent', MQTT_PASSWORD: cluster.users.agent.password });
  // ada, bob and cy each on their own node.
  roundtable(() => [on(0), on(1), on(2)], 'cluster');
});
