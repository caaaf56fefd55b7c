import { afterAll, describe, expect, it } from 'vitest';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { chaosRng, report, type Rng, runBin, scale, sleep, waitUntil } from './chaos-kit.ts';
import { auditOf } from './disk-invariants.ts';
import { startFaultProxy } from './fault-proxy.ts';
import { expectCompletedCleanly, isBeat, type JobRun, printed, startJob, waitPrinted } from './job-scenario.ts';
import { SecretScan, endWithSecretScan } from './secret-scan.ts';

/**
 * Network faults (issue 9), through TCP proxies between the broker and each party while a job runs
 * with heartbeats: the watcher's connection is cut (FIN), reset (RST), refused for a while, or
 * stalled (bytes stop, the socket stays open — only keepalive can tell); the agent's publishes
 * lose their PUBACK, are refused or stalled; the heartbeat's connection is cut, reset and stalled.
 * Events published during a fault arrive after it, once; a stall is detected by keepalive
 * (MQTT_KEEPALIVE=2) in seconds; the job completes and no seq is printed twice.
 */

const fileRng = chaosRng('network-faults');
const WATCHER_FAULTS = ['cut', 'reset', 'refuse', 'stall'] as const;
const AGENT_FAULTS = ['lost-puback', 'refused', 'stalled', 'hb-cut', 'hb-reset', 'hb-stall'] as const;
/** Every kind at least once in a default run (twice for the watcher's), many more in a long one. */
const WATCHER_CYCLES = scale(8, 40);
const AGENT_CYCLES = scale(8, 48);
const KEEPALIVE_S = 2;
const scan = new SecretScan();
let broker: AedesTestBroker;
const auth = { username: 'mam-chaos', password: `pw-net-${fileRng.int(1e8, 9e8)}` };

afterAll(() => endWithSecretScan(scan, 'secret scan after the network faults'));

const env = () => ({
  MQTT_BROKER: broker.host,
  MQTT_PORT: String(broker.port),
  MQTT_USERNAME: auth.username,
  MQTT_PASSWORD: auth.password,
  MQTT_KEEPALIVE: String(KEEPALIVE_S),
});

let started: Promise<void> | undefined;
function setup(): Promise<void> {
  started ??= (async () => {
    broker = await startAedesBroker({ auth });
    scan.secret('MQTT password', auth.password);
    await scan.captureWire(broker.url, auth);
  })();
  return started;
}

/** Publishes `n` progress events directly (not through any proxy); each must be acknowledged. */
async function publishDirect(run: JobRun, tag: string, n: number): Promise<string[]> {
  const details: string[] = [];
  for (let i = 1; i <= n; i++) {
    const detail = `${tag} #${i}`;
    const r = await runBin('mam-publish', ['--job', run.id, '--event', 'progress', '--detail', detail], run.ws);
    expect(r.code, r.stderr).toBe(0);
    details.push(detail);
  }
  return details;
}

const printedOnce = (run: JobRun, detail: string) => printed(run).filter((e) => e.detail === detail).length === 1;

// The two sides have their own proxies and jobs on one broker, and mostly wait: they run side by side.
describe.concurrent('network faults', () => {
  it(`watcher side: ${WATCHER_CYCLES} cuts, resets, refusals and stalls: events sent meanwhile arrive after, once; stalls found by keepalive`, {
    timeout: scale(120_000, 900_000),
  }, async () => {
    const rng: Rng = chaosRng('network-faults/watcher');
    await setup();
    const proxy = await startFaultProxy(broker.host, broker.port);
    const run = await startJob({ env: env(), subEnv: { MQTT_PORT: String(proxy.port) }, idleTimeoutSec: 20, scan });
    const counts: Record<string, number> = { cut: 0, reset: 0, refuse: 0, stall: 0 };
    const detections: number[] = [];
    let duringFault = 0;
    const faults = rng.deck(WATCHER_FAULTS, WATCHER_CYCLES);
    for (let k = 1; k <= faults.length; k++) {
      await sleep(rng.int(100, 600));
      const fault = faults[k - 1]!;
      counts[fault]!++;
      let sent: string[];
      if (fault === 'stall') {
        const accepted = proxy.accepted;
        const t0 = Date.now();
        proxy.stallCurrent();
        sent = await publishDirect(run, `during stall ${k}`, rng.int(1, 3));
        // The watcher must notice the dead path by itself (keepalive) and come back on a new connection.
        expect(await waitUntil(() => proxy.accepted > accepted, 20_000), `stall ${k} not detected: ${run.sub.stderr}`).toBe(true);
        detections.push(Date.now() - t0);
      } else {
        if (fault === 'refuse') proxy.refuse(true);
        if (fault === 'reset') proxy.reset();
        else proxy.cut();
        sent = await publishDirect(run, `during ${fault} ${k}`, rng.int(1, 3));
        await sleep(rng.int(100, 1_500));
        proxy.refuse(false);
      }
      duringFault += sent.length;
      for (const detail of sent) {
        expect(await waitUntil(() => printedOnce(run, detail), 25_000), `'${detail}' not printed after the fault: ${run.sub.stderr}`).toBe(true);
      }
    }
    const done = await runBin('mam-publish', ['--job', run.id, '--event', 'completed'], run.ws);
    expect(done.code, done.stderr).toBe(0);
    const v = await expectCompletedCleanly(run);
    await proxy.close();
    const reconnected = auditOf(run.ws, run.id).filter((l) => l.type === 'reconnected').length;
    const slowest = Math.max(0, ...detections);
    report({
      fault: 'watcher side: TCP cut (FIN), reset (RST), refusal, stall of the live connection',
      injected: WATCHER_CYCLES,
      checked:
        `faults ${JSON.stringify(counts)}; ${duringFault} events published during them each printed once after; ${reconnected} reconnects audited; ` +
        `stalls detected by keepalive ${KEEPALIVE_S} s in ${detections.map((d) => (d / 1000).toFixed(1)).join('/') || '-'} s; job completed, exit 0; ${v.lines} lines, no seq twice`,
      result: 'pass',
    });
    // Keepalive 2 s: PINGREQ after 2 s of silence, given up 1 s later; a reconnect follows within 0.5 s.
    expect(slowest).toBeLessThan(10_000);
  });

  it(`agent side: ${AGENT_CYCLES} lost PUBACKs, refusals and stalls of publishes, and cuts, resets and stalls of the heartbeat`, {
    timeout: scale(120_000, 900_000),
  }, async () => {
    const rng: Rng = chaosRng('network-faults/agent');
    await setup();
    const pub = await startFaultProxy(broker.host, broker.port);
    const hb = await startFaultProxy(broker.host, broker.port);
    // The heartbeat timer inherits the `started` publish's environment: it beats through `hb`.
    const run = await startJob({ env: env(), agentEnv: { MQTT_PORT: String(hb.port) }, idleTimeoutSec: 20, scan });
    expect(await waitPrinted(run, isBeat), 'no heartbeat through the proxy').toBe(true);
    const viaPub = { MQTT_PORT: String(pub.port) };
    const counts: Record<string, number> = {};
    const delivered: string[] = [];
    let notAcknowledged = 0;
    const faults = rng.deck(AGENT_FAULTS, AGENT_CYCLES);
    for (let k = 1; k <= faults.length; k++) {
      await sleep(rng.int(100, 500));
      const fault = faults[k - 1]!;
      counts[fault] = (counts[fault] ?? 0) + 1;
      const detail = `${fault} ${k}`;
      if (fault.startsWith('hb-')) {
        const floor = Math.max(...printed(run).map((e) => e.seq as number));
        if (fault === 'hb-cut') hb.cut();
        else if (fault === 'hb-reset') hb.reset();
        else hb.stallCurrent();
        // The timer reconnects (after a stall: once keepalive gave up) and a later beat is printed.
        expect(await waitPrinted(run, (e) => isBeat(e) && e.seq > floor, 20_000), `heartbeat did not come back after ${detail}: ${run.sub.stderr}`).toBe(true);
        continue;
      }
      if (fault === 'lost-puback') pub.losePubacks(1);
      if (fault === 'refused') pub.refuse(true);
      if (fault === 'stalled') pub.stallAll();
      const publishing = runBin('mam-publish', ['--job', run.id, '--event', 'progress', '--detail', detail], run.ws, viaPub);
      if (fault === 'refused') setTimeout(() => pub.refuse(false), rng.int(100, 1_200));
      if (fault === 'stalled') setTimeout(() => pub.release(), rng.int(200, 3_000));
      const r = await publishing;
      pub.losePubacks(0);
      pub.refuse(false);
      pub.release();
      // Exit 2 is allowed only when no try got its PUBACK; it is then published again, as an agent would.
      if (r.code === 2) {
        notAcknowledged++;
        const again = await runBin('mam-publish', ['--job', run.id, '--event', 'progress', '--detail', `${detail} again`], run.ws, viaPub);
        expect(again.code, again.stderr).toBe(0);
        delivered.push(`${detail} again`);
      } else {
        expect(r.code, r.stderr).toBe(0);
        delivered.push(detail);
      }
    }
    for (const detail of delivered) expect(await waitUntil(() => printedOnce(run, detail), 15_000), `'${detail}' not printed once`).toBe(true);
    const done = await runBin('mam-publish', ['--job', run.id, '--event', 'completed'], run.ws, viaPub);
    expect(done.code, done.stderr).toBe(0);
    const v = await expectCompletedCleanly(run);
    await pub.close();
    await hb.close();
    report({
      fault: 'agent side: lost PUBACK (reset after the broker took the message), refused and stalled publishes; heartbeat connection cut, reset, stalled',
      injected: AGENT_CYCLES,
      checked:
        `faults ${JSON.stringify(counts)}; ${pub.pubacksLost} PUBACKs lost → retried, the broker's second copy audited duplicate (${v.duplicates} duplicates); ` +
        `${notAcknowledged} publishes exit 2 then published again; every acknowledged event printed once; heartbeat resumed after every fault; job completed, exit 0`,
      result: 'pass',
    });
    if (pub.pubacksLost > 0) expect(v.duplicates).toBeGreaterThanOrEqual(1);
  });
});
