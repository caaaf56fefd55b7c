import { describe, expect, it, onTestFinished } from 'vitest';
import { startDashboard } from '../../src/core/dashboard/dashboard.ts';
import { createLogger } from '../../src/core/log.ts';
import { Registry } from '../../src/core/registry/registry.ts';
import { spawnBin } from '../brokers/bin-process.ts';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { waitUntil } from '../helpers/wait.ts';
import { configOf, fleetWorkspace, runningJob } from '../fleet/fleet-fixtures.ts';

/**
 * The dashboard's `agent offline` count (docs/dashboard.md): with MAM_FLEET_SECRET, the board
 * reads the fleet's presence watch, so a job whose agent died shows as offline without any event
 * of its own; without the secret there is no such count.
 */
describe('mam dashboard: agents that went away', () => {
  useBrokerCleanup();

  async function board(ws: ReturnType<typeof fleetWorkspace>) {
    const config = configOf(ws);
    const running = await startDashboard({
      config,
      registry: new Registry(config),
      log: createLogger('test', 'silent'),
      host: '127.0.0.1',
      port: 0,
      allowActions: false,
      pushIntervalMs: 50,
    });
    onTestFinished(() => running.close());
    return running.board;
  }

  it("a running job's agent killed (its Last Will): the row turns offline and the count says 1", { timeout: 30_000 }, async () => {
    const broker = await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const [ada, bob] = ['ada-dash', 'bob-dash'];
    const agents = [ada, bob].map((name) => spawnBin('mam', ['agent', 'up', '--name', name, '--refresh', '1'], ws));
    for (const [i, a] of agents.entries()) await a.waitForStderr(new RegExp(`^ONLINE ${[ada, bob][i]} `, 'm'));
    await runningJob(ws, 'dab00001', ada);
    await runningJob(ws, 'dab00002', bob);

    const b = await board(ws);
    const offline = () => b.counts().find((c) => c.key === 'offline')?.count;
    expect(await waitUntil(() => b.has('dab00001') && b.has('dab00002'), 10_000)).toBe(true);
    expect(offline()).toBe(0);

    agents[0]!.kill('SIGKILL');
    expect(await waitUntil(() => b.row('dab00001')?.health === 'offline', 15_000)).toBe(true);
    expect(offline()).toBe(1);
    expect(b.row('dab00002')?.health).toBeNull();

    // A clean stop is offline too (its retained presence says shutdown).
    agents[1]!.kill('SIGTERM');
    expect(await waitUntil(() => offline() === 2, 15_000)).toBe(true);
  });

  it('without MAM_FLEET_SECRET there is no offline count at all', async () => {
    const broker = await startAedesBroker();
    const ws = fleetWorkspace(broker.port, { MAM_FLEET_SECRET: '' });
    const b = await board(ws);
    expect(b.counts().some((c) => c.key === 'offline')).toBe(false);
  });
});
