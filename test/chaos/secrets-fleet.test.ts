import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/log.ts';
import { startAedesBroker, stopAllBrokers } from '../helpers/brokers.ts';
import { makeWorkspace } from '../helpers/cli.ts';
import { startWebhookServer } from '../fleet/webhook-server.ts';
import { chaosRng, killAll, report, runBin, spawnBin, waitUntil } from './chaos-kit.ts';
import { SecretScan } from './secret-scan.ts';

/**
 * Secrets, the whole list (issue 27 item 4): beside secrets.test.ts's tokens, password and dispatch
 * secret, the fleet secret, the dashboard token and webhook URLs — through presence, a broker turn
 * claim and its holder, an alerting monitor whose webhooks fail, the dashboard with wrong and right
 * logins, and a delegated agent that puts every secret it can reach into its details — all at log
 * level trace with MAM_DEBUG=1. Then a grep of the wire, every output, every file under `.mam`,
 * and the argv of every process on the host, sampled while they ran (argv is readable by every
 * local user through `ps`).
 */

const rng = chaosRng('secrets-fleet');
const scan = new SecretScan();

afterAll(async () => {
  await killAll();
  await stopAllBrokers();
});

/** Every process's command line, read off /proc every few milliseconds until stopped. */
function sampleArgv(): { stop: () => string[] } {
  const seen = new Set<string>();
  const sample = () => {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        seen.add(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '));
      } catch {
        // Gone between the listing and the read.
      }
    }
  };
  const timer = setInterval(sample, 20);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return [...seen];
    },
  };
}

describe('secrets never leave the records: fleet secret, dashboard token, webhook URLs', () => {
  it('a log line that carries a secret, from wherever, is written with <redacted>, escaped forms too', () => {
    const secret = `s3cr"et\\${rng.int(1e8, 9e8)}`;
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mam-log-')), 'log');
    const log = createLogger('t', 'trace', [secret, undefined, ''], pino.destination({ dest: file, sync: true }));
    log.trace({ err: `connect failed: ${secret}` }, `at ${secret}`);
    const line = readFileSync(file, 'utf8');
    expect(JSON.parse(line)).toMatchObject({ err: 'connect failed: <redacted>', msg: 'at <redacted>' });
    expect(line).not.toContain(JSON.stringify(secret).slice(1, -1));
  });

  it('wire, outputs, files and argv hold none of them; modes 0600/0700', { timeout: 120_000 }, async () => {
    const auth = { username: 'mam-chaos', password: `pw-secret-${rng.int(1e8, 9e8)}` };
    const fleetSecret = `fleet-secret-${rng.int(1e8, 9e8)}-${rng.int(1e8, 9e8)}-${rng.int(1e8, 9e8)}`;
    const dashboardToken = `dash-token-${rng.int(1e8, 9e8)}-${rng.int(1e8, 9e8)}`;
    const dispatchSecret = `dispatch-secret-${rng.int(1e8, 9e8)}`;
    const [failing, hanging] = await Promise.all([startWebhookServer(() => 'fail'), startWebhookServer(() => 'hang')]);
    scan
      .secret('MQTT password', auth.password)
      .secret('MAM_FLEET_SECRET', fleetSecret)
      .secret('MAM_DASHBOARD_TOKEN', dashboardToken)
      .secret('MAM_DISPATCH_SECRET', dispatchSecret)
      .secret('a failing webhook URL', failing.secret)
      .secret('a hanging webhook URL', hanging.secret);
    const broker = await startAedesBroker({ auth });
    await scan.captureWire(broker.url, auth);
    const argv = sampleArgv();
    const ws = scan.workspace(
      makeWorkspace({
        MQTT_BROKER: broker.host,
        MQTT_PORT: String(broker.port),
        MQTT_USERNAME: auth.username,
        MQTT_PASSWORD: auth.password,
        MQTT_KEEPALIVE: '2',
        MAM_FLEET_SECRET: fleetSecret,
        MAM_DASHBOARD_TOKEN: dashboardToken,
        MAM_DISPATCH_SECRET: dispatchSecret,
        MAM_LOG_LEVEL: 'trace',
        MAM_DEBUG: '1',
      }),
    );
    const ok = (r: { code: number | null; stderr: string }, code = 0) => expect(r.code, r.stderr).toBe(code);

    // 1. A monitor that alerts into two webhooks, one answering 500 and one never answering.
    const targets = path.join(ws.root, 'webhooks');
    writeFileSync(targets, `${failing.url}\nslack:${hanging.url}\n`, { mode: 0o600 });
    const monitor = spawnBin('mam-subscribe', ['--all', '--notify', `@${targets}`], ws);
    await monitor.waitStderr(/^SUBSCRIBED/m);

    // 2. Presence, and a broker turn claim whose holder outlives the command.
    const presence = spawnBin('mam', ['agent', 'up', '--name', 'ada', '--refresh', '1'], ws);
    ok(await runBin('mam', ['claim', '--broker', '--settle-ms', '300', '--ttl', '3', '--turn', 't-1-1', '--agent', 'ada'], ws));
    ok(await runBin('mam', ['claim', '--broker', '--settle-ms', '300', '--ttl', '3', '--turn', 't-1-1', '--agent', 'bob'], ws), 4);
    ok(await runBin('mam', ['agents', '--json'], ws));

    // 3. The dashboard with its token: a wrong login, a right one, a bearer read.
    const dashboard = spawnBin('mam', ['dashboard', '--port', '0'], ws);
    await dashboard.waitStderr(/^mam dashboard on /m);
    const url = /^mam dashboard on (\S+)/m.exec(dashboard.stderr)![1]!.replace(/\/$/, '');
    const login = (token: string) =>
      fetch(`${url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', origin: url }, body: JSON.stringify({ token }) });
    expect((await login(`${dashboardToken}-wrong`)).status).toBe(401);
    expect((await login(dashboardToken)).status).toBe(200);
    expect((await fetch(`${url}/api/state`, { headers: { authorization: `Bearer ${dashboardToken}` } })).status).toBe(200);

    // 4. A delegated agent that leaks every secret in its environment into its details, then fails
    // (an alert, so the webhooks are tried).
    const agent = path.join(ws.root, 'leaky-agent.sh');
    writeFileSync(
      agent,
      [
        '$MAM_PUBLISH_CMD --event progress --detail "fleet=$MAM_FLEET_SECRET dash=$MAM_DASHBOARD_TOKEN pw=$MQTT_PASSWORD ds=$MAM_DISPATCH_SECRET"',
        '$MAM_PUBLISH_CMD --event error --detail "failed: $MAM_FLEET_SECRET $MAM_DASHBOARD_TOKEN" --attempt-id "$MAM_ATTEMPT_ID"',
      ].join('\n'),
      { mode: 0o700 },
    );
    ok(await runBin('mam', ['delegate', '--brief', 'leaky', '--exec', `sh ${agent}`, '--heartbeat', '1'], ws), 1);
    expect(await waitUntil(() => failing.requests.length >= 1 && hanging.requests.length >= 1, 15_000)).toBe(true);
    await waitUntil(() => /webhook|notify/i.test(monitor.stderr), 10_000);

    presence.kill('SIGTERM');
    dashboard.kill('SIGTERM');
    monitor.kill('SIGTERM');
    await Promise.all([presence.done, dashboard.done, monitor.done]);
    const commandLines = argv.stop();
    // The leaky agent's own mam-publish lines carry the secrets it put there itself: its choice, not MAM's.
    const startedByMam = commandLines.filter((l) => !/ --detail (fleet=|failed: )/.test(l));
    startedByMam.forEach((line, i) => scan.text(`argv ${i}: ${line.slice(0, 80)}`, line));
    expect(commandLines.some((l) => l.includes('mam-turn-holder'))).toBe(true);

    const r = await scan.finish();
    report({
      fault:
        'secrets, whole list: fleet secret, dashboard token, webhook URLs (+ password, dispatch secret) through presence, a broker claim and its holder, failing webhooks, dashboard logins and a leaky delegated agent, at trace with MAM_DEBUG=1',
      injected: r.scanned.secrets,
      checked: `grep of ${r.scanned.wire} wire messages, ${r.scanned.outputs} outputs and argv samples (${commandLines.length} command lines), ${r.scanned.files} files under .mam; modes 0600/0700`,
      result: r.leaks.length + r.modeProblems.length === 0 ? 'pass' : `FAIL: ${[...r.leaks, ...r.modeProblems].slice(0, 3).join('; ')}`,
    });
    expect(r.leaks).toEqual([]);
    expect(r.modeProblems).toEqual([]);
  });
});
