import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { signPresence } from '../../src/core/fleet/presence.ts';
import { spawnBin } from '../brokers/bin-process.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { sleep } from '../helpers/wait.ts';
import { SECRET, agentsJson, fleetAudit, fleetWorkspace, waitForStatus } from '../fleet/fleet-fixtures.ts';

/**
 * Forged presence (issue 27): a client on the broker without `MAM_FLEET_SECRET` writes retained
 * presence for agents that do not exist, over a dead agent's Last Will, and over a live agent; and
 * replays a genuine `online` after its agent died. `mam agents` must never show a forged agent
 * online, and must keep showing a live one.
 */

const ROOT = 'python/mqtt/agents';
const name = () => `hp-${randomBytes(3).toString('hex')}`;
const presenceInput = (agent: string, status: 'online' | 'offline' = 'online') => ({
  agent,
  host: 'evil',
  capabilities: ['review'],
  status,
  since: new Date().toISOString(),
  refreshSec: 30,
});

describe('hostile presence (embedded aedes)', () => {
  let broker: TestBroker;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  it('unsigned, tampered, duplicate-key, oversized and junk presence for made-up agents: none listed, each audited', async () => {
    const ws = fleetWorkspace(broker.port);
    const attacker = await connectPlainClient(broker.url);
    // A genuine presence, as if captured off the wire (the attacker cannot sign one).
    const genuine = (agent: string) => JSON.parse(signPresence(presenceInput(agent, 'offline'), SECRET)) as Record<string, any>;
    const forged: Array<[string, string, string]> = [];
    const add = (why: string, body: (agent: string) => string) => {
      const agent = name();
      forged.push([why, agent, body(agent)]);
    };
    add('schema', (a) => {
      const p = genuine(a);
      delete p.data.hmac_sig;
      return JSON.stringify({ ...p, status: 'online' });
    });
    add('hmac', (a) => JSON.stringify({ ...genuine(a), status: 'online', data: { hmac_sig: '' } }));
    add('hmac', (a) => JSON.stringify({ ...genuine(a), status: 'online', data: { hmac_sig: randomBytes(32).toString('hex') } }));
    add('hmac', (a) => signPresence(presenceInput(a), 'not-the-fleet-secret'));
    // The signature of an offline presence, the status flipped, or a second status after the signed one.
    add('hmac', (a) => JSON.stringify({ ...genuine(a), status: 'online' }));
    add('schema', (a) => signPresence(presenceInput(a, 'offline'), SECRET).replace(/}$/, ',"status":"online"}'));
    add('schema', (a) => signPresence(presenceInput(a, 'offline'), SECRET).replace(/^{/, '{"status":"online",'));
    add('schema', (a) => JSON.stringify({ ...genuine(a), status: 'online', host: 'x'.repeat(300 * 1024) }));
    add('schema', (a) => JSON.stringify({ ...genuine(a), status: 'online', refresh_sec: 0 }).replace('"refresh_sec":0', '"refresh_sec":1e400'));
    add('schema', () => 'online');
    add('schema', () => '{"event":"presence","status":"online"}');
    for (const [, agent, body] of forged) await attacker.publishAsync(`${ROOT}/${agent}`, body, { qos: 1, retain: true });

    const rows = await agentsJson(ws);
    for (const [why, agent] of forged)
      expect(
        rows.find((r) => r.name === agent),
        `${why} forgery of ${agent}`,
      ).toBeUndefined();
    const rejected = fleetAudit(ws).filter((e) => e.type === 'rejected' && e.what === 'presence');
    expect(rejected.map((e) => [e.reason, e.agent]).sort()).toEqual(forged.map(([why, agent]) => [why, agent]).sort());
    for (const [, agent] of forged) await attacker.publishAsync(`${ROOT}/${agent}`, '', { qos: 1, retain: true });
    await attacker.endAsync(true);
  });

  it('a forged online over a dead agent’s Last Will: the agent is not shown online', async () => {
    const ws = fleetWorkspace(broker.port);
    const agent = name();
    const up = spawnBin('mam', ['agent', 'up', '--name', agent, '--refresh', '1'], ws);
    await up.waitForStderr(/^ONLINE /m);
    up.kill('SIGKILL');
    await waitForStatus(ws, agent, 'offline');
    const attacker = await connectPlainClient(broker.url);
    await attacker.publishAsync(`${ROOT}/${agent}`, signPresence(presenceInput(agent), 'not-the-fleet-secret'), { qos: 1, retain: true });
    expect((await agentsJson(ws)).find((r) => r.name === agent)?.status).not.toBe('online');
    await attacker.publishAsync(`${ROOT}/${agent}`, '', { qos: 1, retain: true });
    await attacker.endAsync(true);
  });

  it('forgeries over a live agent’s retained presence do not hide it: it writes its online presence back at once', async () => {
    const ws = fleetWorkspace(broker.port);
    const agent = name();
    // A refresh far longer than the test: only the answer to the forgery can bring the agent back.
    const up = spawnBin('mam', ['agent', 'up', '--name', agent, '--refresh', '600'], ws);
    await up.waitForStderr(/^ONLINE /m);
    expect((await agentsJson(ws)).find((r) => r.name === agent)?.status).toBe('online');
    const attacker = await connectPlainClient(broker.url);
    // Another key, junk, a captured online with a second `status` after it, and a clear (`mosquitto_pub -r -n`).
    const forgeries = [
      signPresence(presenceInput(agent, 'offline'), 'not-the-fleet-secret'),
      'gone',
      signPresence(presenceInput(agent), SECRET).replace(/}$/, ',"status":"offline"}'),
      '',
    ];
    for (const body of forgeries) {
      await attacker.publishAsync(`${ROOT}/${agent}`, body, { qos: 1, retain: true });
      await sleep(300);
      const row = (await agentsJson(ws)).find((r) => r.name === agent);
      expect(row?.status, `after ${JSON.stringify(body.slice(0, 40))}`).toBe('online');
    }
    expect(fleetAudit(ws).filter((e) => e.type === 'rejected' && e.agent === agent).length).toBeGreaterThanOrEqual(forgeries.length - 1);
    up.kill('SIGTERM');
    expect((await up.result).code).toBe(0);
    await attacker.endAsync(true);
  });

  it('a genuine online replayed after its agent died: online for at most 3 × refresh_sec after its last refresh, then stale', async () => {
    const ws = fleetWorkspace(broker.port);
    const agent = name();
    const tap = await connectPlainClient(broker.url);
    let captured: Buffer | undefined;
    tap.on('message', (_t, payload) => {
      const p = JSON.parse(payload.toString('utf8') || '{}') as { status?: string };
      if (p.status === 'online') captured = Buffer.from(payload);
    });
    await tap.subscribeAsync(`${ROOT}/${agent}`, { qos: 1 });
    const up = spawnBin('mam', ['agent', 'up', '--name', agent, '--refresh', '1'], ws);
    await up.waitForStderr(/^ONLINE /m);
    await sleep(1_200);
    up.kill('SIGKILL');
    await waitForStatus(ws, agent, 'offline');
    expect(captured).toBeDefined();
    const lastSeen = Date.parse((JSON.parse(captured!.toString('utf8')) as { last_seen: string }).last_seen);
    await tap.publishAsync(`${ROOT}/${agent}`, captured!, { qos: 1, retain: true });
    const stale = await waitForStatus(ws, agent, 'stale', 10_000);
    // Signed and on its own topic, a replay is indistinguishable from the agent: the bound is its age.
    expect(Date.now() - lastSeen).toBeGreaterThan(3 * 1_000);
    expect(stale.last_seen).toBe(new Date(lastSeen).toISOString());
    await tap.publishAsync(`${ROOT}/${agent}`, '', { qos: 1, retain: true });
    await tap.endAsync(true);
  });
});
