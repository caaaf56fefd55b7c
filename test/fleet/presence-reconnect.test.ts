import { describe, expect, it, onTestFinished } from 'vitest';
import { spawnBin } from '../brokers/bin-process.ts';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { sleep, waitUntil } from '../helpers/wait.ts';
import { fleetWorkspace, runningJob } from './fleet-fixtures.ts';

/**
 * The presence watch's reconnect path (src/core/fleet/alerts/presence-watch.ts): an agent that dies
 * while the monitor is cut off from the broker is only seen afterwards, as a retained `offline`
 * arriving on the new subscription. The watch knew it online, so that retained copy is news: one
 * `agent_offline` alert, not a silent baseline.
 */
describe('alerts: an agent that died while the monitor was away', () => {
  useBrokerCleanup();

  it('raises agent_offline once, after the monitor is back', { timeout: 40_000 }, async () => {
    const broker = await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const proxy = await startTcpProxy('127.0.0.1', broker.port);
    onTestFinished(() => proxy.close());
    const agent = 'ada-away';

    // A 5 s refresh: stale only after 15 s, so the alert below can only come from the retained Last Will.
    const up = spawnBin('mam', ['agent', 'up', '--name', agent, '--refresh', '5'], ws);
    await up.waitForStderr(new RegExp(`^ONLINE ${agent} `, 'm'));
    await runningJob(ws, 'aaa00001', agent);

    // The monitor reaches the broker only through the proxy; the agent does not.
    const mon = spawnBin('mam-subscribe', ['--all', '--alerts'], ws, { env: { MAM_LOG_LEVEL: 'info', MQTT_PORT: String(proxy.port) } });
    await mon.waitForStderr(/^SUBSCRIBED all /m);
    await mon.waitForStderr(/watching agent presence/);
    // Let it know the agent online: its retained presence follows the SUBACK.
    await sleep(1_000);
    const alerts = () =>
      mon.stdout
        .split('\n')
        .filter((l) => l.includes('"alert"'))
        .map((l) => JSON.parse(l) as { alert: string; agent?: string; job_id?: string; detail: string });

    proxy.pause();
    proxy.cut();
    up.kill('SIGKILL'); // its Last Will: a retained offline presence, published while the monitor is away
    await sleep(1_500);
    expect(alerts()).toEqual([]);

    proxy.resume();
    expect(await waitUntil(() => alerts().some((a) => a.alert === 'agent_offline'), 20_000), mon.stderr).toBe(true);
    // Seen again on later reconnects or refreshes, it stays one alert.
    await sleep(2_000);
    expect(alerts().filter((a) => a.alert === 'agent_offline')).toEqual([
      expect.objectContaining({ agent, job_id: 'aaa00001', detail: 'connection lost (Last Will)' }),
    ]);
  });
});
