import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signPresence } from '../../src/core/fleet/presence.ts';
import { expectOneErrorLine, spawnBin } from '../brokers/bin-process.ts';
import { type TestBroker, describeWithBroker, startAedesBroker, startMosquitto, startNatsServer, useBrokerCleanup } from '../helpers/brokers.ts';
import { runBinAsync } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { deadPort } from '../publisher/publish-fixtures.ts';
import { agentsJson, fleetAudit, fleetWorkspace, waitForStatus } from './fleet-fixtures.ts';

/**
 * Presence (docs/coordination-reference.md, "Agents and presence"): online while up, offline by Last
 * Will on SIGKILL, offline on a clean stop, forgeries refused.
 */
function presenceTests(start: () => Promise<TestBroker>): void {
  let broker: TestBroker;
  const name = () => `ag-${randomBytes(3).toString('hex')}`;

  it('online while up; a SIGKILL makes the broker publish its Last Will: offline (connection_lost)', async () => {
    broker ??= await start();
    const ws = fleetWorkspace(broker.port);
    const agent = name();
    const up = spawnBin('mam', ['agent', 'up', '--name', agent, '--capabilities', 'review,ts', '--host', 'box-1', '--refresh', '1'], ws);
    await up.waitForStderr(new RegExp(`^ONLINE ${agent} mqtt://`, 'm'));
    const online = (await agentsJson(ws)).find((r) => r.name === agent);
    expect(online).toMatchObject({ status: 'online', host: 'box-1', capabilities: ['review', 'ts'], reason: null, current_job: null });
    up.kill('SIGKILL');
    const gone = await waitForStatus(ws, agent, 'offline');
    expect(gone.reason).toBe('connection_lost');
  });

  it('SIGTERM: publishes offline (shutdown) itself and exits 0', async () => {
    broker ??= await start();
    const ws = fleetWorkspace(broker.port);
    const agent = name();
    const up = spawnBin('mam', ['agent', 'up', '--name', agent], ws);
    await up.waitForStderr(/^ONLINE /m);
    up.kill('SIGTERM');
    expect((await up.result).code).toBe(0);
    const row = (await agentsJson(ws)).find((r) => r.name === agent);
    expect(row).toMatchObject({ status: 'offline', reason: 'shutdown' });
  });

  it('a presence signed with another secret, or replayed on another agent topic, is refused and audited', async () => {
    broker ??= await start();
    const ws = fleetWorkspace(broker.port);
    const [forged, replayed, real] = [name(), name(), name()];
    const root = 'python/mqtt/agents';
    const client = await connectPlainClient(broker.url);
    const now = new Date().toISOString();
    const input = { host: 'evil', capabilities: [], status: 'online' as const, since: now, refreshSec: 30 };
    await client.publishAsync(`${root}/${forged}`, signPresence({ ...input, agent: forged }, 'not-the-secret'), { qos: 1, retain: true });
    // A genuine signature, on the wrong topic: `real`'s presence pretending to be `replayed`.
    await client.publishAsync(`${root}/${replayed}`, signPresence({ ...input, agent: real }, 'fleet-test-secret'), { qos: 1, retain: true });
    await client.publishAsync(`${root}/${real}`, signPresence({ ...input, agent: real }, 'fleet-test-secret'), { qos: 1, retain: true });
    const rows = await agentsJson(ws);
    expect(rows.map((r) => r.name)).toContain(real);
    expect(rows.map((r) => r.name)).not.toContain(forged);
    expect(rows.map((r) => r.name)).not.toContain(replayed);
    const rejected = fleetAudit(ws).filter((e) => e.type === 'rejected');
    expect(rejected).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ what: 'presence', reason: 'hmac', agent: forged }),
        expect.objectContaining({ what: 'presence', reason: 'topic', agent: replayed }),
      ]),
    );
    for (const t of [forged, replayed, real]) await client.publishAsync(`${root}/${t}`, '', { qos: 1, retain: true });
    await client.endAsync(true);
  });
}

describe('fleet presence (embedded aedes)', () => {
  useBrokerCleanup();
  presenceTests(() => startAedesBroker());

  it('refuses to run without MAM_FLEET_SECRET: one line, exit 1', async () => {
    const broker = await startAedesBroker();
    const ws = fleetWorkspace(broker.port, { MAM_FLEET_SECRET: '' });
    for (const args of [['agent', 'up', '--name', 'x'], ['agents'], ['claim', '--broker', '--turn', 't-1-2', '--agent', 'x']]) {
      expect(expectOneErrorLine(await runBinAsync('mam', args, ws), 1)).toMatch(/MAM_FLEET_SECRET is not set/);
    }
  });

  it('SIGTERM while the broker is unreachable (MQTT.js retrying): exits 0 at once, never online', async () => {
    const ws = fleetWorkspace(await deadPort(), { MAM_LOG_LEVEL: 'info' });
    const up = spawnBin('mam', ['agent', 'up', '--name', 'lonely'], ws);
    await up.waitForStderr(/connecting to the broker/);
    up.kill('SIGTERM');
    const r = await up.result;
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/^ONLINE /m);
  });

  it('shows the running job whose agent_session is the agent', async () => {
    const broker = await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const up = spawnBin('mam', ['agent', 'up', '--name', 'worker-7'], ws);
    await up.waitForStderr(/^ONLINE /m);
    expect((await runBinAsync('mam-register', ['--job-id', 'f1000001', '--brief', 'b'], ws)).code).toBe(0);
    expect((await runBinAsync('mam-pick', ['--agent-session', 'worker-7'], ws)).code).toBe(0);
    expect((await agentsJson(ws)).find((r) => r.name === 'worker-7')?.current_job).toBe('f1000001');
  });
});

describeWithBroker('mosquitto', 'fleet presence (mosquitto)', () => {
  presenceTests(() => startMosquitto());
});

describeWithBroker('nats-server', 'fleet presence (NATS)', () => {
  presenceTests(() => startNatsServer());
});
