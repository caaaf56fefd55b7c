import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAedesBroker, stopAllBrokers } from '../helpers/brokers.ts';
import { makeWorkspace } from '../helpers/cli.ts';
import { chaosRng, jsonLines, killAll, report, runBin, spawnAgent, spawnBin, waitUntil } from './chaos-kit.ts';
import { recordOf } from './disk-invariants.ts';
import { SecretScan } from './secret-scan.ts';

/**
 * Secrets (issue 9): a whole delegation through a broker with authentication — local and remote
 * jobs, heartbeats, an agent that tries to publish every secret it can reach in its `detail`, an
 * operator close, failures with a wrong password, every command at the loudest log level and with
 * MAM_DEBUG=1 — then a grep of the wire capture (a plain client on `#`), every stdout and stderr,
 * and every file under `.mam` but the records, for the job tokens, the MQTT password (the right
 * one and a wrong one) and the dispatch secret. Record and log files must be 0600, folders 0700.
 */

const rng = chaosRng('secrets');
const scan = new SecretScan();

afterAll(async () => {
  await killAll();
  await stopAllBrokers();
});

describe('secrets never leave the records', () => {
  it('wire, outputs, logs and audit files hold no token, password or dispatch secret; modes 0600/0700', { timeout: 90_000 }, async () => {
    const auth = { username: 'mam-chaos', password: `pw-secret-${rng.int(1e8, 9e8)}` };
    const secret = `dispatch-secret-${rng.int(1e8, 9e8)}`;
    const wrongPassword = `wrong-pw-${rng.int(1e8, 9e8)}`;
    scan.secret('MQTT password', auth.password).secret('MAM_DISPATCH_SECRET', secret).secret('a wrong MQTT password', wrongPassword);
    const broker = await startAedesBroker({ auth });
    await scan.captureWire(broker.url, auth);
    const env = {
      MQTT_BROKER: broker.host,
      MQTT_PORT: String(broker.port),
      MQTT_USERNAME: auth.username,
      MQTT_PASSWORD: auth.password,
      MQTT_KEEPALIVE: '2',
      MAM_DISPATCH_SECRET: secret,
      MAM_LOG_LEVEL: 'trace',
      MAM_DEBUG: '1',
    };
    const delegator = scan.workspace(makeWorkspace(env));
    const host = scan.workspace(makeWorkspace(env));
    const ok = (r: { code: number | null; stderr: string }, code = 0) => expect(r.code, r.stderr).toBe(code);
    const idOf = (stdout: string) => (JSON.parse(stdout) as { job_id: string }).job_id;

    // An agent that puts every secret it can reach into its details.
    const agentScript = path.join(host.root, 'leaky-agent.sh');
    writeFileSync(
      agentScript,
      [
        'TOKEN=$(node -e \'process.stdout.write(JSON.parse(require("fs").readFileSync(process.env.MAM_REGISTRY_DIR+"/"+process.env.JOB_ID+".json","utf8")).auth_token)\')',
        '$MAM_PUBLISH_CMD --event progress --detail "pw=$MQTT_PASSWORD secret=$MAM_DISPATCH_SECRET token=$TOKEN in $PWD/x"',
        '$MAM_PUBLISH_CMD --event completed --detail "done: $TOKEN" --attempt-id "$MAM_ATTEMPT_ID"',
      ].join('\n'),
      { mode: 0o700 },
    );

    // 1. A remote job: sealed dispatch, a runner on another host, the delegator's --remote watch.
    const remote = idOf((await runBin('mam-register', ['--brief', 'remote job', '--heartbeat', '1', '--transport', 'remote'], delegator)).stdout);
    const watchRemote = spawnBin('mam-subscribe', ['--job', remote, '--remote'], delegator);
    await watchRemote.waitStderr(/^SUBSCRIBED/m);
    const runner = spawnBin('mam-remote', ['run', '--session', 'S', '--once', '--exec', `sh ${agentScript}`], host);
    await runner.waitStderr(/^SUBSCRIBED remote runner/m);
    ok(await runBin('mam-remote', ['dispatch', '--job', remote, '--session', 'S'], delegator));
    ok(await runner.done);
    const remoteWatch = await watchRemote.done;
    ok(remoteWatch);
    expect(jsonLines(remoteWatch.stdout).some((e) => /<redacted>/.test(e.detail as string))).toBe(true);

    // 2. A local job with heartbeats whose agent leaks into its details; then an error.
    const local = idOf((await runBin('mam-register', ['--brief', 'local job', '--heartbeat', '1'], delegator)).stdout);
    const token = recordOf(delegator, local).auth_token;
    const agent = spawnAgent(delegator);
    const watchLocal = spawnBin('mam-subscribe', ['--job', local], delegator);
    await watchLocal.waitStderr(/^SUBSCRIBED/m);
    ok(
      await runBin(
        'mam-publish',
        ['--job', local, '--event', 'started', '--heartbeat', '1', '--watch-pid', String(agent.pid), '--detail', `token ${token} pw ${auth.password}`],
        delegator,
      ),
    );
    await waitUntil(() => jsonLines(watchLocal.stdout).length >= 3, 10_000);
    ok(await runBin('mam-publish', ['--job', local, '--event', 'error', '--detail', `failed with ${secret} and ${token}`], delegator));
    ok(await watchLocal.done, 1);
    agent.kill();
    // A refused publish, with a stack trace (MAM_DEBUG=1).
    ok(await runBin('mam-publish', ['--job', local, '--event', 'progress', '--detail', token], delegator), 5);

    // 3. An operator close, and the tools an operator reads jobs with.
    const closed = idOf((await runBin('mam-register', ['--brief', 'closed job'], delegator)).stdout);
    ok(await runBin('mam-close', ['--job', closed, '--request', 'cancelled'], delegator));
    ok(await runBin('mam-subscribe', ['--job', closed], delegator), 1);
    ok(await runBin('mam', ['jobs', '--json'], delegator));
    ok(await runBin('mam', ['show', '--job', local], delegator));
    ok(await runBin('mam', ['redispatch', '--job', local], delegator));

    // 4. Wrong credentials: refused by the broker, named by user, never by password.
    const wrong = { MQTT_PASSWORD: wrongPassword };
    const refused = await runBin('mam-publish', ['--job', closed, '--event', 'progress'], delegator, wrong);
    expect(refused.code).toBe(5); // closed: refused before the broker is even needed
    const pending = idOf((await runBin('mam-register', ['--brief', 'pending job'], delegator)).stdout);
    const badPublish = await runBin('mam-publish', ['--job', pending, '--event', 'progress'], delegator, wrong);
    expect(badPublish.code).toBe(2);
    expect(badPublish.stderr).toMatch(/refused user mam-chaos/);
    const badWatch = await runBin('mam-subscribe', ['--job', pending], delegator, wrong);
    expect(badWatch.code).toBe(3);
    const badClose = await runBin('mam-close', ['--job', pending, '--request', 'deadline_timeout'], delegator, wrong);
    expect(badClose.code, badClose.stderr).toBe(0);

    // 5. The whole flow in one command.
    const delegate = await runBin(
      'mam',
      ['delegate', '--brief', 'delegated', '--exec', `sh ${agentScript}`, '--heartbeat', '1'],
      { ...host, env: { ...host.env } },
      { MAM_REGISTRY_DIR: path.join(host.root, '.mam', 'jobs') },
    );
    ok(delegate);

    await waitUntil(() => scan.wireCapture.some((m) => m.includes('<redacted>')), 5_000);
    const r = await scan.finish();
    const redactions = scan.wireCapture.filter((m) => m.includes('<redacted>')).length;
    report({
      fault:
        'secrets: a full delegation (remote + local + heartbeats + close + wrong password + mam delegate) at log level trace with MAM_DEBUG=1, agents leaking every secret into details',
      injected: r.scanned.secrets,
      checked: `grep of ${r.scanned.wire} wire messages (plain client on #), ${r.scanned.outputs} stdout/stderr captures, ${r.scanned.files} files under .mam (records excepted) for ${r.scanned.secrets} secrets (job tokens, MQTT password, a wrong password, MAM_DISPATCH_SECRET); ${redactions} messages carried <redacted>; file modes 0600, folders 0700`,
      result: r.leaks.length + r.modeProblems.length === 0 ? 'pass' : `FAIL: ${[...r.leaks, ...r.modeProblems].slice(0, 3).join('; ')}`,
    });
    expect(r.leaks).toEqual([]);
    expect(r.modeProblems).toEqual([]);
    expect(redactions).toBeGreaterThan(0);
  });
});
