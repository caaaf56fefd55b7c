import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { withRegistryLock } from '../../src/core/registry/lock.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { buildEventPayload } from '../../src/core/wire/payloads.ts';
import { signPayload } from '../../src/core/wire/signature.ts';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { makeWorkspace, type Workspace } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { chaosRng, jsonLines, type Proc, report, runBin, sleep, spawnAgent, spawnBin, waitUntil } from './chaos-kit.ts';
import { isBeat } from './job-scenario.ts';
import { recordOf, registryDirOf } from './disk-invariants.ts';
import { SecretScan, endWithSecretScan } from './secret-scan.ts';

/**
 * Clock (issue 9): a wall-clock jump changes no timeout decision. The processes under test run under
 * libfaketime with FAKETIME_DONT_FAKE_MONOTONIC=1 and a timestamp file that the test rewrites
 * mid-run, so their wall clock (Date) jumps a day forward and back while the monotonic clock runs
 * on. The watcher's idle and wall timeouts must fire when the monotonic clock says, the heartbeat
 * must keep beating, and the registry lock must not take a live holder's lock for a stale one.
 * Without libfaketime (Debian: `apt-get install faketime`) those tests are skipped, and fail in CI;
 * payload timestamps far in the past or future are checked either way.
 */

const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
].find((f) => existsSync(f));
const rng = chaosRng('clock');
const scan = new SecretScan();
let broker: AedesTestBroker;
const auth = { username: 'mam-chaos', password: `pw-clock-${rng.int(1e8, 9e8)}` };
let jumps = 0;

afterAll(() => endWithSecretScan(scan));

let started: Promise<void> | undefined;
async function brokerEnv(): Promise<NodeJS.ProcessEnv> {
  started ??= (async () => {
    broker = await startAedesBroker({ auth });
    scan.secret('MQTT password', auth.password);
    await scan.captureWire(broker.url, auth);
  })();
  await started;
  return { MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port), MQTT_USERNAME: auth.username, MQTT_PASSWORD: auth.password, MQTT_KEEPALIVE: '2' };
}

/** A wall clock the test moves: the environment that puts a process under it, and the lever. */
function fakeClock(ws: Workspace): { env: NodeJS.ProcessEnv; set(offset: string): void } {
  const file = path.join(ws.root, 'faketime.rc');
  writeFileSync(file, '+0\n');
  return {
    env: { LD_PRELOAD: LIBFAKETIME, FAKETIME_TIMESTAMP_FILE: file, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' },
    set(offset: string) {
      writeFileSync(file, `${offset}\n`);
      jumps++;
    },
  };
}

const needsFaketime = LIBFAKETIME ? it : process.env.CI === 'true' ? it : it.skip;
if (!LIBFAKETIME) process.stderr.write('SKIPPED: clock-jump tests — libfaketime not installed (apt-get install faketime)\n');

async function register(ws: Workspace, args: string[]): Promise<string> {
  const r = await runBin('mam-register', ['--brief', 'clock', ...args], ws);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { job_id: string }).job_id;
}

/** Moves the clock along `plan` (ms after start → offset) while `proc` runs. */
async function jumpAlong(clock: { set(o: string): void }, proc: Proc, plan: Array<[number, string]>): Promise<void> {
  const t0 = Date.now();
  for (const [at, offset] of plan) {
    await sleep(Math.max(0, at - (Date.now() - t0)));
    if (!proc.running) return;
    clock.set(offset);
  }
}

// Each test has its own workspace and clock file, and mostly waits: they run side by side.
describe.concurrent('clock: a wall-clock jump changes no timeout decision', () => {
  needsFaketime('the idle timeout fires after 4 s of monotonic time, whatever the wall clock does', { timeout: 30_000 }, async () => {
    expect(LIBFAKETIME, 'libfaketime is required in CI').toBeDefined();
    const ws = scan.workspace(makeWorkspace(await brokerEnv()));
    const clock = fakeClock(ws);
    const id = await register(ws, ['--idle-timeout', '4', '--ack-timeout', '1']);
    const sub = spawnBin('mam-subscribe', ['--job', id, '--ack-timeout', '0'], ws, clock.env);
    await sub.waitStderr(/^SUBSCRIBED/m);
    const t0 = Date.now();
    await jumpAlong(clock, sub, [
      [500, '+1d'],
      [1_500, '-2d'],
      [2_500, '+365d'],
      [3_200, '-30d'],
    ]);
    const res = await sub.done;
    const ms = Date.now() - t0;
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toMatch(new RegExp(`job ${id}: idle timeout`));
    // Not early (a day forward is not 4 s of silence), not late (a day back does not postpone it).
    expect(ms).toBeGreaterThanOrEqual(3_500);
    expect(ms).toBeLessThan(7_000);
    report({
      fault: 'wall clock jumps ±1 day, +1 year, −30 days under mam-subscribe (idle timeout 4 s)',
      injected: 4,
      checked: `idle timeout fired after ${(ms / 1000).toFixed(1)} s (window 3.5–7 s), exit 2`,
      result: 'pass',
    });
  });

  needsFaketime('the wall-clock budget (--timeout 4) is measured on the monotonic clock too', { timeout: 30_000 }, async () => {
    const ws = scan.workspace(makeWorkspace(await brokerEnv()));
    const clock = fakeClock(ws);
    const id = await register(ws, []);
    const sub = spawnBin('mam-subscribe', ['--job', id, '--timeout', '4', '--idle-timeout', '0'], ws, clock.env);
    await sub.waitStderr(/^SUBSCRIBED/m);
    const t0 = Date.now();
    await jumpAlong(clock, sub, [
      [300, '-1d'],
      [1_200, '+2d'],
      [2_000, '-7d'],
    ]);
    const res = await sub.done;
    const ms = Date.now() - t0;
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toMatch(new RegExp(`job ${id}: wall-clock timeout`));
    expect(ms).toBeGreaterThanOrEqual(3_500);
    expect(ms).toBeLessThan(7_000);
    report({
      fault: 'wall clock jumps ±days under mam-subscribe (--timeout 4)',
      injected: 3,
      checked: `wall-clock budget ended after ${(ms / 1000).toFixed(1)} s (window 3.5–7 s), exit 2`,
      result: 'pass',
    });
  });

  needsFaketime('the heartbeat keeps beating when its wall clock jumps a day back or forward', { timeout: 40_000 }, async () => {
    const ws = scan.workspace(makeWorkspace(await brokerEnv()));
    const clock = fakeClock(ws);
    const id = await register(ws, ['--heartbeat', '1', '--idle-timeout', '4', '--ack-timeout', '5']);
    const agent = spawnAgent(ws);
    const sub = spawnBin('mam-subscribe', ['--job', id], ws);
    await sub.waitStderr(/^SUBSCRIBED/m);
    // The agent and its timer live under the fake clock; the watcher does not.
    const started = await runBin('mam-publish', ['--job', id, '--event', 'started', '--heartbeat', '1', '--watch-pid', String(agent.pid)], ws, clock.env);
    expect(started.code, started.stderr).toBe(0);
    const beats = () => jsonLines(sub.stdout).filter(isBeat).length;
    expect(await waitUntil(() => beats() >= 2, 6_000)).toBe(true);
    clock.set('-1d');
    const afterBack = beats();
    // A timer that computed its next beat on the wall clock would wait a day now; idle fires in 4 s.
    await waitUntil(() => beats() >= afterBack + 2 || !sub.running, 8_000);
    expect(beats(), `no beats after a day back: ${sub.stderr}`).toBeGreaterThanOrEqual(afterBack + 2);
    clock.set('+2d');
    const afterForward = beats();
    await waitUntil(() => beats() >= afterForward + 2 || !sub.running, 8_000);
    expect(beats(), `no beats after a day forward: ${sub.stderr}`).toBeGreaterThanOrEqual(afterForward + 2);
    expect(sub.running, sub.stderr).toBe(true);
    const done = await runBin('mam-publish', ['--job', id, '--event', 'completed'], ws, clock.env);
    expect(done.code, done.stderr).toBe(0);
    const res = await sub.done;
    expect(res.code, res.stderr).toBe(0);
    agent.kill();
    report({
      fault: 'wall clock of the heartbeat timer jumps −1 day, then +2 days',
      injected: 2,
      checked: `beats kept coming every second (${beats()} printed); the watcher (idle 4 s) never timed out; job completed, exit 0`,
      result: 'pass',
    });
  });

  needsFaketime('a command whose clock runs a day ahead waits for a live lock instead of breaking it', { timeout: 30_000 }, async () => {
    const ws = scan.workspace(makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: '1' }));
    const clock = fakeClock(ws);
    clock.set('+1d');
    await runBin('mam-register', ['--brief', 'first'], ws); // creates the registry
    const HOLD_MS = 3_000;
    let register: Promise<{ code: number | null; stderr: string }> | undefined;
    const t0 = Date.now();
    // A live holder: proper-lockfile refreshes the lock's mtime every second while it holds it.
    await withRegistryLock(registryDirOf(ws), path.join(registryDirOf(ws), '.lock'), async () => {
      register = runBin('mam-register', ['--brief', 'from a day ahead'], ws, clock.env);
      await sleep(HOLD_MS);
    });
    const r = await register!;
    const ms = Date.now() - t0;
    expect(r.code, r.stderr).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(HOLD_MS - 200);
    report({
      fault: 'a registry command whose wall clock runs 1 day ahead meets a live lock',
      injected: 1,
      checked: `it waited for the holder (${(ms / 1000).toFixed(1)} s for a ${HOLD_MS / 1000} s hold) instead of breaking the lock; the holder was not compromised`,
      result: 'pass',
    });
  });

  it('payload timestamps far in the past or future decide nothing: accepted, printed, and the idle clock runs on monotonic time', {
    timeout: 30_000,
  }, async () => {
    const ws = scan.workspace(makeWorkspace(await brokerEnv()));
    const id = await register(ws, ['--idle-timeout', '2', '--ack-timeout', '1']);
    const job = recordOf(ws, id);
    const sub = spawnBin('mam-subscribe', ['--job', id], ws);
    await sub.waitStderr(/^SUBSCRIBED/m);
    const client = await connectPlainClient(broker.url, auth);
    const stamps = [new Date('1970-01-01T00:00:00Z'), new Date('2999-12-31T23:59:59Z'), new Date(0), new Date(Date.now() - 86_400_000 * 365 * 30)];
    let last = Date.now();
    for (const [i, now] of stamps.entries()) {
      const p = signPayload(
        buildEventPayload({
          jobId: id,
          seq: i + 1,
          event: i === 0 ? 'started' : 'progress',
          detail: `stamp ${now.toISOString()}`,
          dispatchToken: job.dispatch_token,
          attemptId: job.attempt_id,
          now,
        }),
        job.auth_token,
      );
      await client.publishAsync(`python/mqtt/jobs/${id}/events`, wireJson(p), { qos: 1 });
      last = Date.now();
      await sleep(500);
    }
    await client.endAsync(true);
    const res = await sub.done;
    const silence = Date.now() - last;
    expect(res.code, res.stderr).toBe(2);
    expect(jsonLines(res.stdout).map((e) => e.timestamp)).toEqual([
      '1970-01-01T00:00:00Z',
      '2999-12-31T23:59:59Z',
      '1970-01-01T00:00:00Z',
      expect.stringMatching(/Z$/),
    ]);
    // Idle 3 s from the last event, measured on the watcher's own clock, whatever the payloads said.
    expect(silence).toBeGreaterThanOrEqual(1_500);
    expect(silence).toBeLessThan(5_000);
    report({
      fault: 'signed events stamped 1970, 2999 and 30 years ago',
      injected: stamps.length,
      checked: `all accepted and printed in order; idle timeout (2 s) fired ${(silence / 1000).toFixed(1)} s after the last one`,
      result: 'pass',
    });
  });
});

afterAll(() => {
  if (jumps > 0) console.log(`[chaos] clock: ${jumps} wall-clock jumps injected`);
});
