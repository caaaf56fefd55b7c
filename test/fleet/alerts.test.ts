import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnBin } from '../brokers/bin-process.ts';
import { type TestBroker, describeWithBroker, startAedesBroker, startMosquitto, startNatsServer, useBrokerCleanup } from '../helpers/brokers.ts';
import type { Workspace } from '../helpers/cli.ts';
import { freePort } from '../helpers/free-port.ts';
import { waitUntil } from '../helpers/wait.ts';
import { fleetWorkspace, publishEvent, runningJob, startMonitor, waitForStatus } from './fleet-fixtures.ts';
import { startWebhookServer } from './webhook-server.ts';

/**
 * Alerts (docs/coordination-reference.md, "Alerts"): `mam-subscribe --all --alerts` raises
 * `stalled`, `failed`, `permission_waiting` and `agent_offline`, never an alert for a completion;
 * `--notify` POSTs each one in the shape its webhook expects, retries with backoff, never holds the
 * watch up, and never writes the webhook's URL anywhere.
 */

const hex = () => randomBytes(3).toString('hex');
/** Job ids unique per test (8 hex digits). */
const jobIds = (n: number) => {
  const base = randomBytes(2).toString('hex');
  return Array.from({ length: n }, (_, i) => `${base}${String(i).padStart(4, '0')}`);
};

/** Every file under `dir`, for a look for the webhook's secret in whatever the commands wrote. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

function expectSecretNowhere(ws: Workspace, texts: string[], secrets: string[]): void {
  const written = filesUnder(path.join(ws.root, '.mam')).map((f) => readFileSync(f, 'latin1'));
  for (const secret of secrets) {
    for (const t of texts) expect(t).not.toContain(secret);
    for (const t of written) expect(t).not.toContain(secret);
  }
}

describe('alerts and webhooks (embedded aedes)', () => {
  useBrokerCleanup();
  let broker: TestBroker;

  it('stalled, failed, permission_waiting, agent_offline (Last Will): one alert each, none for a completion; Slack and Discord shapes', {
    timeout: 60_000,
  }, async () => {
    broker ??= await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const [old, agentJob, done, failed, asks, stalls] = jobIds(6);
    const agent = `ag-${hex()}`;

    // A job that failed before the monitor started: its retained `error` comes back at subscribe
    // time and is printed, but it was news for an earlier monitor, not for this one.
    await runningJob(ws, old!, 'w-old');
    await publishEvent(ws, old!, 'error', '--detail', 'failed yesterday');

    // Slack fails twice, then accepts: the first alert is retried with backoff.
    const slack = await startWebhookServer((n) => (n <= 2 ? 'fail' : 'ok'));
    const discord = await startWebhookServer();
    const mon = await startMonitor(ws, ['--notify', `slack:${slack.url}`, '--notify', `discord:${discord.url}`]);
    await mon.waitForEvent(old!, 'error');

    const up = spawnBin('mam', ['agent', 'up', '--name', agent, '--capabilities', 'review', '--refresh', '1'], ws);
    await up.waitForStderr(new RegExp(`^ONLINE ${agent} `, 'm'));
    await runningJob(ws, agentJob!, agent);

    await runningJob(ws, done!, 'w-done');
    await publishEvent(ws, done!, 'started');
    await publishEvent(ws, done!, 'completed', '--detail', 'all good');

    await runningJob(ws, failed!, 'w-fail');
    await publishEvent(ws, failed!, 'started');
    await publishEvent(ws, failed!, 'error', '--detail', 'tests failed');

    await runningJob(ws, asks!, 'w-ask');
    await publishEvent(ws, asks!, 'permission_required', '--detail', 'wants to run rm');

    // An idle window of 1 s: picked, then silent (no event, so however slow this machine is, the
    // condition is raised exactly once), it is stalled a second or two later.
    await runningJob(ws, stalls!, 'w-stall', '--idle-timeout', '1');

    up.kill('SIGKILL');

    const offline = await mon.waitForAlert({ alert: 'agent_offline', agent });
    // The seed's table: an agent offline says the hours since its last check-in (just now: 0).
    expect(offline).toMatchObject({ job_id: agentJob, detail: 'connection lost (Last Will)', hours_since_check_in: 0 });
    const failedAlert = await mon.waitForAlert({ alert: 'failed', job_id: failed! });
    expect(failedAlert).toMatchObject({ agent: 'w-fail', detail: 'tests failed' });
    const permissionAlert = await mon.waitForAlert({ alert: 'permission_waiting', job_id: asks! });
    expect(permissionAlert).toMatchObject({ agent: 'w-ask', detail: 'wants to run rm' });
    const stalled = await mon.waitForAlert({ alert: 'stalled', job_id: stalls! });
    expect(stalled).toMatchObject({ agent: 'w-stall' });
    expect(stalled.detail).toMatch(/^no accepted event for \d+ s \(window 1 s\)$/);
    // …and a stalled job the minutes since its last update (a second or two: 0).
    expect(stalled.minutes_since_update).toBe(0);
    for (const a of [failedAlert, permissionAlert]) expect(Object.keys(a).sort()).toEqual(['agent', 'alert', 'at', 'detail', 'job_id']);

    // The completion's lines were printed (an alert for it would have been raised with them).
    await mon.waitForEvent(done!, 'completed');
    const alerts = mon.alerts();
    expect(alerts.filter((a) => a.job_id === done || a.job_id === old)).toEqual([]);
    // The `error` event and the `error` state of one attempt: one alert.
    expect(alerts.filter((a) => a.alert === 'failed')).toHaveLength(1);
    expect(alerts.map((a) => a.alert).sort()).toEqual(['agent_offline', 'failed', 'permission_waiting', 'stalled']);

    // Each alert reaches both webhooks, in their shapes, as a POST of JSON.
    const since = (a: (typeof alerts)[number]) =>
      a.alert === 'stalled'
        ? `; ${a.minutes_since_update} min since last update`
        : a.alert === 'agent_offline'
          ? `; ${a.hours_since_check_in} h since last check-in`
          : '';
    const texts = alerts.map(
      (a) => `[MAM] ${a.alert} (${[a.job_id && `job ${a.job_id}`, a.agent && `agent ${a.agent}`].filter(Boolean).join(', ')}): ${a.detail}${since(a)}`,
    );
    expect(await waitUntil(() => discord.delivered.length >= 4 && slack.delivered.length >= 4, 20_000)).toBe(true);
    expect(discord.delivered.map((r) => r.body).sort((x, y) => (x.content < y.content ? -1 : 1))).toEqual(texts.sort().map((content) => ({ content })));
    expect(slack.delivered.map((r) => r.body.text).sort()).toEqual(texts.sort());
    expect(slack.delivered.every((r) => Object.keys(r.body).join() === 'text')).toBe(true);
    for (const r of [...slack.requests, ...discord.requests]) expect([r.method, r.contentType]).toEqual(['POST', 'application/json']);

    // Slack's first alert: two 500s, then the same body again, 0.5 s then 1 s apart (doubling).
    const [first, second, third] = slack.requests;
    expect([first!.answered, second!.answered, third!.answered]).toEqual(['fail', 'fail', 'ok']);
    expect(second!.body).toEqual(first!.body);
    expect(third!.body).toEqual(first!.body);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(450);
    expect(third!.at - second!.at).toBeGreaterThanOrEqual(950);
    expect(mon.proc.stderr).toMatch(/"target":"#1 \(slack\)","attempt":1,"of":4,"why":"HTTP 500".*notify failed: will retry/);

    mon.proc.kill('SIGTERM');
    const end = await mon.proc.result;
    expect(end.code).toBe(0);
    expectSecretNowhere(ws, [end.stdout, end.stderr], [slack.secret, discord.secret]);
  });

  it('a webhook that never answers and one that is down hold nothing up: events keep printing, failures are logged without the URL', {
    timeout: 60_000,
  }, async () => {
    broker ??= await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const [a, b, c] = jobIds(3);
    const slow = await startWebhookServer(() => 'hang');
    const fine = await startWebhookServer();
    const downSecret = `T0${randomBytes(10).toString('hex')}`;
    const down = `http://127.0.0.1:${await freePort()}/hooks/${downSecret}`;
    // The failing targets first: a queue shared between targets would hold `fine` up behind them.
    const mon = await startMonitor(ws, ['--notify', slow.url, '--notify', down, '--notify', `discord:${fine.url}`]);

    await runningJob(ws, a!, 'w-a');
    await publishEvent(ws, a!, 'error', '--detail', 'first failure');
    await mon.waitForAlert({ alert: 'failed', job_id: a! });
    // The slow webhook holds the first alert's POST open; the dead one refuses it.
    expect(await waitUntil(() => slow.hanging === 1, 10_000)).toBe(true);
    await mon.proc.waitForStderr(/"target":"#2 \(json\)","attempt":1,"of":4,"why":"ECONNREFUSED"/);
    expect(await waitUntil(() => fine.delivered.length === 1, 10_000)).toBe(true);

    // While that POST hangs, the watch goes on: events print and a new alert goes out to `fine`.
    await runningJob(ws, b!, 'w-b');
    await publishEvent(ws, b!, 'started');
    await publishEvent(ws, b!, 'progress', '--detail', 'halfway');
    await mon.waitForEvent(b!, 'progress');
    await runningJob(ws, c!, 'w-c');
    await publishEvent(ws, c!, 'permission_required', '--detail', 'may I');
    await mon.waitForAlert({ alert: 'permission_waiting', job_id: c! });
    expect(await waitUntil(() => fine.delivered.length === 2, 10_000)).toBe(true);
    // The slow target's own queue waits: whatever it has received so far is the first alert (tries of it).
    expect(slow.requests.every((r) => r.body.alert?.job_id === a)).toBe(true);
    // The JSON shape (a host neither Slack's nor Discord's): both keys, and the alert itself.
    expect(slow.requests[0]!.body).toMatchObject({
      text: expect.stringMatching(/^\[MAM\] failed /),
      content: expect.any(String),
      alert: { alert: 'failed', job_id: a },
    });

    // The slow one's POST times out (5 s) and is retried: logged by position and kind only.
    await mon.proc.waitForStderr(/"target":"#1 \(json\)","attempt":1,"of":4,"why":"no answer within 5000 ms"/, 15_000);
    mon.proc.kill('SIGTERM');
    const end = await mon.proc.result;
    expect(end.code).toBe(0);
    expectSecretNowhere(ws, [end.stdout, end.stderr], [slow.secret, downSecret, fine.secret]);
  });

  it('a frozen agent (SIGSTOP: its connection stays up, no will) is alerted stale; back and then killed, alerted again', { timeout: 60_000 }, async () => {
    broker ??= await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const agent = `ag-${hex()}`;
    const mon = await startMonitor(ws);
    const up = spawnBin('mam', ['agent', 'up', '--name', agent, '--refresh', '1'], ws);
    await up.waitForStderr(new RegExp(`^ONLINE ${agent} `, 'm'));
    up.kill('SIGSTOP');
    const stale = await mon.waitForAlert({ alert: 'agent_offline', agent });
    expect(stale.detail).toMatch(/^stale: no presence since \d{4}-/);
    up.kill('SIGCONT');
    // Its next refresh is a newer `online`: the condition cleared, so the next loss is news again.
    await waitForStatus(ws, agent, 'online');
    up.kill('SIGKILL');
    await mon.waitForAlert({ alert: 'agent_offline', agent, detail: 'connection lost (Last Will)' });
    expect(mon.alerts().filter((a) => a.agent === agent)).toHaveLength(2);
  });

  it('--alerts and --notify need --all; a --notify that is no URL is refused without repeating it (exit 64)', async () => {
    broker ??= await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const { runBinAsync } = await import('../helpers/cli.ts');
    const noAll = await runBinAsync('mam-subscribe', ['--job', 'abcd1234', '--notify', 'https://hooks.slack.com/services/SECRETX'], ws);
    expect(noAll.code).toBe(64);
    expect(noAll.stderr).not.toContain('SECRETX');
    const bad = await runBinAsync('mam-subscribe', ['--all', '--notify', 'hooks.slack.com/services/SECRETY'], ws);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/^ERROR: --notify: target #1: not a URL\n$/);
  });
});

/** The same alerts on a broker process: Last Will, failure, a completion that raises nothing. */
function alertsOnServer(start: () => Promise<TestBroker>): void {
  it('agent_offline by Last Will and failed are raised and POSTed; a completion is not', { timeout: 60_000 }, async () => {
    const broker = await start();
    const ws = fleetWorkspace(broker.port);
    const [done, failed] = jobIds(2);
    const agent = `ag-${hex()}`;
    const hook = await startWebhookServer();
    const mon = await startMonitor(ws, ['--notify', `discord:${hook.url}`]);
    const up = spawnBin('mam', ['agent', 'up', '--name', agent, '--refresh', '1'], ws);
    await up.waitForStderr(new RegExp(`^ONLINE ${agent} `, 'm'));
    await runningJob(ws, done!, 'w-done');
    await publishEvent(ws, done!, 'completed');
    await runningJob(ws, failed!, 'w-fail');
    await publishEvent(ws, failed!, 'error', '--detail', 'crashed');
    up.kill('SIGKILL');
    await mon.waitForAlert({ alert: 'agent_offline', agent, detail: 'connection lost (Last Will)' });
    await mon.waitForAlert({ alert: 'failed', job_id: failed!, detail: 'crashed' });
    await mon.waitForEvent(done!, 'completed');
    expect(
      mon
        .alerts()
        .map((a) => a.alert)
        .sort(),
    ).toEqual(['agent_offline', 'failed']);
    expect(await waitUntil(() => hook.delivered.length === 2, 10_000)).toBe(true);
    expect(hook.delivered.map((r) => Object.keys(r.body).join())).toEqual(['content', 'content']);
    mon.proc.kill('SIGTERM');
    expect((await mon.proc.result).code).toBe(0);
  });
}

describeWithBroker('mosquitto', 'alerts and webhooks (mosquitto)', () => {
  alertsOnServer(() => startMosquitto());
});

describeWithBroker('nats-server', 'alerts and webhooks (NATS)', () => {
  alertsOnServer(() => startNatsServer());
});
