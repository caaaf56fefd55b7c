import { beforeAll, describe, expect, it, vi } from 'vitest';
import { parseWireJson } from '../../src/core/wire/canonical-json.ts';
import { verifyPayload } from '../../src/core/wire/signature.ts';
import { type TestBroker, describeWithBroker, startAedesBroker, startMosquitto, useBrokerCleanup } from '../helpers/brokers.ts';
import { runBinAsync } from '../helpers/cli.ts';
import { brokerWorkspace, deadPort, publishOk, register } from '../publisher/publish-fixtures.ts';
import { startWatcher, stderrBesidesSubscribed } from './watcher.ts';

/**
 * `mam-subscribe` exit codes (contract §1, §4) against real brokers, with the built bins as a
 * wrapper script runs them: 0 completed, 1 error/cancelled, 2 idle or wall timeout, 3 broker
 * down, 66 unknown job, 64 usage. The agent publishes only after `SUBSCRIBED`.
 */

function lifecycleTests(start: () => Promise<TestBroker>): void {
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await start();
  });

  it('started, progress, completed → exit 0; one JSON line per event on stdout, nothing else', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'c3000001';
    const rec = await register(ws, id);
    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    const published: string[] = [];
    for (const event of ['started', 'progress', 'completed']) published.push((await publishOk(ws, id, event, '--detail', `d ${event}`)).stdout);
    const exit = await w.exit();
    expect(exit.code).toBe(0);
    expect(w.lines()).toHaveLength(3);
    expect(w.events().map((e) => [e.seq, e.event, e.detail])).toEqual([
      [1, 'started', 'd started'],
      [2, 'progress', 'd progress'],
      [3, 'completed', 'd completed'],
    ]);
    // Each line is the signed payload, compact, as it came off the wire.
    w.lines().forEach((line, i) => {
      expect(verifyPayload(parseWireJson(line), rec.auth_token)).toBe(true);
      expect(JSON.parse(line)).toEqual(JSON.parse(published[i]!));
      expect(line).toBe(JSON.stringify(JSON.parse(line)));
    });
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
    expect(exit.stderr).toMatch(/^SUBSCRIBED /);
  });

  it('an error event → exit 1', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'c3000002';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    await publishOk(ws, id, 'started');
    await publishOk(ws, id, 'error', '--detail', 'tests failed');
    const exit = await w.exit();
    expect(exit.code).toBe(1);
    expect(w.events().map((e) => e.event)).toEqual(['started', 'error']);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
  });

  it('mam-close --request cancelled ends a running watch within seconds with exit 1, printed once', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'c3000003';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    await publishOk(ws, id, 'started');
    const t0 = Date.now();
    const close = await runBinAsync('mam-close', ['--job', id, '--request', 'cancelled'], ws);
    expect(close.code).toBe(0);
    expect(close.stderr).toBe('');
    const exit = await w.exit(8_000);
    expect(exit.code).toBe(1);
    expect(Date.now() - t0).toBeLessThan(5_000);
    const lines = w.events();
    expect(lines.map((e) => e.event)).toEqual(['started', 'state']);
    expect(lines[1]).toMatchObject({ job_id: id, status: 'cancelled', last_event: 'cancelled', seq: 1 });
  });
}

describe('mam-subscribe exit codes (embedded broker)', () => {
  useBrokerCleanup();
  lifecycleTests(() => startAedesBroker());

  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  it('a close whose notice never reaches the broker still ends the watch from the registry (exit 1)', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'c3000004';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    await publishOk(ws, id, 'started');
    const t0 = Date.now();
    // The operator's mam-close talks to a dead port: only the shared registry tells the watcher.
    const close = await runBinAsync('mam-close', ['--job', id, '--request', 'error'], ws, { env: { MQTT_PORT: String(await deadPort()) } });
    expect(close.code).toBe(0);
    expect(close.stderr).toMatch(/^warning: /);
    const exit = await w.exit(8_000);
    expect(exit.code).toBe(1);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(w.events().map((e) => [e.event, e.status])).toEqual([
      ['started', undefined],
      ['state', 'error'],
    ]);
  });

  it('idle timeout: no event for --idle-timeout after the last one → exit 2', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'c3000005';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id, '--idle-timeout', '1', '--ack-timeout', '1']);
    await w.subscribed();
    await publishOk(ws, id, 'started');
    await vi.waitFor(() => expect(w.lines()).toHaveLength(1), { interval: 20 });
    const printedAt = Date.now();
    const exit = await w.exit(8_000);
    expect(exit.code).toBe(2);
    // Idle is measured from the last accepted event (the ack allowance is spent by then).
    const silence = Date.now() - printedAt;
    expect(silence).toBeGreaterThanOrEqual(800);
    expect(silence).toBeLessThan(4_000);
    expect(w.events().map((e) => e.event)).toEqual(['started']);
    expect(stderrBesidesSubscribed(exit.stderr)).toMatch(new RegExp(`^job ${id}: idle timeout$`));
  });

  it('before the first event the allowance is ack + idle → exit 2 after about their sum', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'c3000006';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id, '--idle-timeout', '0.5', '--ack-timeout', '1']);
    const exit = await w.exit(8_000);
    expect(exit.code).toBe(2);
    expect(exit.ms).toBeGreaterThanOrEqual(1_500);
    expect(exit.ms).toBeLessThan(5_000);
    expect(exit.stdout).toBe('');
  });

  it('wall clock: --timeout from start → exit 2, even while events keep coming', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'c3000007';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id, '--timeout', '2.5', '--idle-timeout', '0']);
    await w.subscribed();
    await publishOk(ws, id, 'started');
    await publishOk(ws, id, 'progress');
    const exit = await w.exit(8_000);
    expect(exit.code).toBe(2);
    expect(exit.ms).toBeGreaterThanOrEqual(2_500);
    expect(exit.ms).toBeLessThan(6_000);
    expect(w.events().map((e) => e.event)).toEqual(['started', 'progress']);
    expect(stderrBesidesSubscribed(exit.stderr)).toMatch(new RegExp(`^job ${id}: wall-clock timeout$`));
  });

  it('several --job: 0 when all completed, 1 when any ended in error', async () => {
    const ws = brokerWorkspace(broker.port);
    const [a, b, c] = ['c3000008', 'c3000009', 'c300000a'];
    await Promise.all([register(ws, a), register(ws, b), register(ws, c)]);
    const both = startWatcher(ws, ['--job', a, '--job', b]);
    const mixed = startWatcher(ws, ['--job', a, '--job', c]);
    await Promise.all([both.subscribed(), mixed.subscribed()]);
    await publishOk(ws, a, 'completed');
    // One job done is not the end of the watch: both still print what comes after it.
    await Promise.all([publishOk(ws, b, 'progress'), publishOk(ws, c, 'progress')]);
    await vi.waitFor(() => expect([both.lines().length, mixed.lines().length]).toEqual([2, 2]));
    expect(both.running).toBe(true);
    expect(mixed.running).toBe(true);
    await Promise.all([publishOk(ws, b, 'completed'), publishOk(ws, c, 'error')]);
    const [e1, e2] = await Promise.all([both.exit(), mixed.exit()]);
    expect(e1.code).toBe(0);
    expect(e2.code).toBe(1);
    expect(
      both
        .events()
        .map((e) => `${e.job_id} ${e.event}`)
        .sort(),
    ).toEqual([`${a} completed`, `${b} completed`, `${b} progress`]);
    expect(
      mixed
        .events()
        .map((e) => `${e.job_id} ${e.event}`)
        .sort(),
    ).toEqual([`${a} completed`, `${c} error`, `${c} progress`]);
  });

  it('unknown job → 66; bad flags → 64; one line on stderr, nothing on stdout', async () => {
    const ws = brokerWorkspace(broker.port);
    await register(ws, 'c300000b');
    const cases: [string[], number, RegExp][] = [
      [['--job', 'c30000ff'], 66, /c30000ff/],
      [['--job', 'XYZ'], 64, /--job/],
      [['--job', 'C300000B'], 64, /--job/],
      [[], 64, /--job <id> or --all/],
      [['--all', '--job', 'c300000b'], 64, /exclusive/],
      [['--job', 'c300000b', '--timeout', 'abc'], 64, /--timeout/],
      [['--job', 'c300000b', '--idle-timeout', '-1'], 64, /--idle-timeout/],
      [['--job', 'c300000b', '--bogus'], 64, /unknown option/],
    ];
    const results = await Promise.all(cases.map(([args]) => runBinAsync('mam-subscribe', args, ws)));
    results.forEach((r, i) => {
      const [args, code, message] = cases[i]!;
      expect({ args, code: r.code }).toEqual({ args, code });
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^(ERROR: )?[^\n]+\n$/);
      expect(r.stderr).toMatch(message);
    });
  });
});

describe("mam-subscribe uses the job's own limits when no flag is given", () => {
  useBrokerCleanup();

  it('--timeout and --idle-timeout from mam-register apply', async () => {
    const broker = await startAedesBroker();
    const ws = brokerWorkspace(broker.port);
    const [wall, idle] = ['c3000010', 'c3000011'];
    await register(ws, wall, '--timeout', '2', '--idle-timeout', '30', '--ack-timeout', '30');
    await register(ws, idle, '--timeout', '60', '--idle-timeout', '1', '--ack-timeout', '1');
    const [w1, w2] = [startWatcher(ws, ['--job', wall]), startWatcher(ws, ['--job', idle])];
    const [e1, e2] = await Promise.all([w1.exit(10_000), w2.exit(10_000)]);
    expect([e1.code, e2.code]).toEqual([2, 2]);
    expect(stderrBesidesSubscribed(e1.stderr)).toBe(`job ${wall}: wall-clock timeout`);
    expect(stderrBesidesSubscribed(e2.stderr)).toBe(`job ${idle}: idle timeout`);
    expect(e1.ms).toBeGreaterThanOrEqual(2_000);
    expect(e2.ms).toBeGreaterThanOrEqual(2_000);
  });
});

describeWithBroker('mosquitto', 'mam-subscribe exit codes (mosquitto)', () => {
  lifecycleTests(() => startMosquitto());
});
