import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type TestBroker, startAedesBroker, startMosquitto, suiteMode } from '../helpers/brokers.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';
import { chaosRng, report, type Rng, runBin, scale, sleep, waitUntil } from './chaos-kit.ts';
import { expectCompletedCleanly, isBeat, printed, reconnects, startJob, timerPid, waitPrinted } from './job-scenario.ts';
import { SecretScan, endWithSecretScan } from './secret-scan.ts';

/**
 * Broker faults (issue 9): the broker is killed and restarted, again and again, while a job runs
 * with heartbeats. Each outage: an agent's publish during it exits 2 (recorded, not delivered); the
 * watcher reconnects; the heartbeat comes back; the agent publishes again after the restart and
 * that event is printed once. At the end the job completes and the watcher exits 0, having printed
 * no seq twice.
 */

const CYCLES = scale(3, 15);
const scan = new SecretScan();

afterAll(() => endWithSecretScan(scan, 'secret scan after the broker faults'));

interface Outage {
  /** Takes the broker down the way this fault does. */
  down(): Promise<void>;
  kind: string;
}

async function restartCycles(rng: Rng, label: string, broker: TestBroker, outage: () => Outage, env: NodeJS.ProcessEnv): Promise<void> {
  const run = await startJob({ env: { MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port), MQTT_KEEPALIVE: '2', ...env }, idleTimeoutSec: 15, scan });
  expect(await waitPrinted(run, isBeat), `no heartbeat printed: ${run.sub.stderr}`).toBe(true);
  const kinds: string[] = [];
  let exit2 = 0;
  for (let k = 1; k <= CYCLES; k++) {
    await sleep(rng.int(200, 1_000));
    const fault = outage();
    kinds.push(fault.kind);
    const before = reconnects(run);
    await fault.down();
    // The agent goes on while the broker is away: on disk, not delivered.
    const during = await runBin('mam-publish', ['--job', run.id, '--event', 'progress', '--detail', `during outage ${k}`, '--attempts', '2'], run.ws);
    expect(during.code, during.stderr).toBe(2);
    exit2++;
    await sleep(rng.int(300, 1_500));
    await broker.restart();
    expect(await waitUntil(() => reconnects(run) > before, 20_000), `${label}: watcher did not reconnect after outage ${k}: ${run.sub.stderr}`).toBe(true);
    // The heartbeat timer reconnects too: a beat newer than the outage's publish reaches the watcher.
    const floor = Math.max(...printed(run).map((e) => e.seq as number));
    expect(await waitPrinted(run, (e) => isBeat(e) && e.seq > floor, 15_000), `${label}: no heartbeat after outage ${k}`).toBe(true);
    const after = await runBin('mam-publish', ['--job', run.id, '--event', 'progress', '--detail', `after restart ${k}`], run.ws);
    expect(after.code, after.stderr).toBe(0);
    expect(await waitPrinted(run, (e) => e.detail === `after restart ${k}`), `${label}: 'after restart ${k}' not printed`).toBe(true);
    expect(run.sub.running).toBe(true);
  }
  const done = await runBin('mam-publish', ['--job', run.id, '--event', 'completed', '--detail', 'done'], run.ws);
  expect(done.code, done.stderr).toBe(0);
  const v = await expectCompletedCleanly(run);
  const lines = printed(run);
  for (let k = 1; k <= CYCLES; k++) expect(lines.filter((e) => e.detail === `after restart ${k}`)).toHaveLength(1);
  // Never delivered, so never printed: the watcher's outcome comes from what reached it.
  expect(lines.filter((e) => /^during outage/.test(e.detail as string))).toEqual([]);
  expect(timerPid(run)).toBeUndefined();
  report({
    fault: `${label}: broker killed and restarted while a job runs with 1 s heartbeats`,
    injected: CYCLES,
    checked:
      `outages [${kinds.join(', ')}]: publish during each exits 2 (${exit2}); watcher reconnects; heartbeat resumes; ` +
      `publish after restart printed once; job completes, exit 0; ${v.lines} lines printed, no seq twice (${v.duplicates} redeliveries audited duplicate); every line verifies`,
    result: 'pass',
  });
}

// Mosquitto as the other broker suites treat it: run, skip when not installed, fail in CI without it.
const mosquitto = suiteMode('mosquitto');
if (mosquitto === 'skip') process.stderr.write('SKIPPED: Mosquitto broker-fault chaos — mosquitto not installed\n');

// The two brokers' scenarios are independent (own broker, own job) and mostly wait: run side by side.
describe.concurrent('broker faults: the broker is killed and restarted while a job runs with heartbeats', () => {
  it(`embedded broker (aedes, level dataDir, auth): ${CYCLES} restarts`, { timeout: scale(120_000, 600_000) }, async () => {
    const rng = chaosRng('broker-faults/embedded');
    const auth = { username: 'mam-chaos', password: `pw-broker-${rng.int(1e8, 9e8)}` };
    scan.secret('MQTT password', auth.password);
    const broker = await startAedesBroker({ dataDir: path.join(tempDirForTest('mam-chaos-aedes-'), 'db'), auth });
    await scan.captureWire(broker.url, auth);
    await restartCycles(rng, 'embedded broker', broker, () => ({ kind: 'close', down: () => broker.stop() }), {
      MQTT_USERNAME: auth.username,
      MQTT_PASSWORD: auth.password,
    });
  });

  (mosquitto === 'skip' ? it.skip : it)(`Mosquitto with persistence: ${CYCLES} kills (SIGKILL or SIGTERM)`, { timeout: scale(120_000, 600_000) }, async () => {
    if (mosquitto === 'fail') throw new Error('mosquitto not installed, and CI=true forbids skipping its suites');
    const rng = chaosRng('broker-faults/mosquitto');
    const broker = await startMosquitto({ persistence: true });
    await scan.captureWire(broker.url);
    const signalled = (sig: NodeJS.Signals) => async () => {
      const pid = broker.pid!;
      process.kill(pid, sig);
      await waitUntil(() => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      }, 10_000);
    };
    await restartCycles(
      rng,
      'Mosquitto (persistence)',
      broker,
      () => {
        const kind = rng.pick(['SIGKILL', 'SIGTERM'] as const);
        return { kind, down: signalled(kind) };
      },
      {},
    );
  });
});
