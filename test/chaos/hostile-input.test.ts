import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { makeWorkspace } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { chaosRng, jsonLines, memoryKiB, report, runBin, scale, spawnBin, waitUntil } from './chaos-kit.ts';
import { auditOf, checkRegistry, recordOf } from './disk-invariants.ts';
import { FORGED, type Hostile, hostileMessages, type Reason } from './forgeries.ts';
import { SecretScan, endWithSecretScan } from './secret-scan.ts';

/**
 * Hostile input (issue 9): a fast-check flood on a watched job's topics while the job runs —
 * malformed, forged, tampered, cross-job, stale-attempt and oversized messages, replayed copies of
 * the events and states the watcher already accepted, and messages on topics that are no kind of
 * ours. None is printed or decides anything; the watcher never crashes; its memory stays bounded;
 * every discard is audited (or, when it names no job of the registry, logged) with its reason, and
 * each replayed event is audited `duplicate`. A `--all` monitor of another registry takes the same
 * flood: every message is rejected and logged, nothing printed.
 */

const rng = chaosRng('hostile-input');
const SMALL = scale(8_000, 60_000);
const OVERSIZED = scale(120, 1_000);
const EVENT_REPLAYS = scale(400, 4_000);
const STATE_REPLAYS = scale(200, 2_000);
const JUNK = scale(100, 1_000);
/** Growth of the watcher's resident memory over the whole flood; a queue that kept what it read would pass this many times over. */
const RSS_GROWTH_LIMIT_MIB = 96;
const RSS_LIMIT_MIB = 320;
const ROOT = 'python/mqtt/jobs';

const scan = new SecretScan();
let broker: AedesTestBroker;
const auth = { username: 'mam-chaos', password: `pw-hostile-${rng.int(1e8, 9e8)}` };

afterAll(() => endWithSecretScan(scan, 'secret scan after the hostile flood'));

const rejectLogs = (stderr: string) =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; reason?: string })
    .filter((l) => l.msg === 'message rejected');

describe('hostile input: a flood on the watcher', () => {
  it(`${SMALL + OVERSIZED} forged/malformed/oversized + ${EVENT_REPLAYS + STATE_REPLAYS} replays + ${JUNK} junk topics: nothing printed, all audited, memory bounded`, {
    timeout: scale(180_000, 1_200_000),
  }, async () => {
    broker = await startAedesBroker({ auth });
    scan.secret('MQTT password', auth.password);
    await scan.captureWire(broker.url, auth);
    const env = { MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port), MQTT_USERNAME: auth.username, MQTT_PASSWORD: auth.password, MQTT_KEEPALIVE: '2' };
    const ws = scan.workspace(makeWorkspace(env));
    const monitorWs = scan.workspace(makeWorkspace(env));
    const reg = async (brief: string) => (JSON.parse((await runBin('mam-register', ['--brief', brief], ws)).stdout) as { job_id: string }).job_id;
    const id = await reg('the watched job');
    const otherId = await reg('another job');
    const oldDispatchToken = recordOf(ws, id).dispatch_token;
    // A second attempt, so that the first one's payloads are stale leftovers.
    expect((await runBin('mam', ['redispatch', '--job', id], ws)).code).toBe(0);
    const keys = { job: recordOf(ws, id), oldDispatchToken, other: recordOf(ws, otherId) };

    const sub = spawnBin('mam-subscribe', ['--job', id], ws);
    const monitor = spawnBin('mam-subscribe', ['--all'], monitorWs);
    await Promise.all([sub.waitStderr(/^SUBSCRIBED/m), monitor.waitStderr(/^SUBSCRIBED/m)]);

    // The attacker sits on the broker and keeps a copy of everything the job legitimately sent.
    const attacker = await connectPlainClient(broker.url, auth);
    const accepted: Array<{ topic: string; payload: Buffer }> = [];
    attacker.on('message', (topic, payload) => accepted.push({ topic, payload: Buffer.from(payload) }));
    await attacker.subscribeAsync(`${ROOT}/${id}/+`, { qos: 1 });
    const legit = ['started', 'progress', 'progress', 'progress'];
    for (const [i, event] of legit.entries()) {
      const r = await runBin('mam-publish', ['--job', id, '--event', event, '--detail', `legit ${i}`, '--attempt-id', '2'], ws);
      expect(r.code, r.stderr).toBe(0);
    }
    expect(await waitUntil(() => jsonLines(sub.stdout).length === 4 && accepted.length === 8, 10_000)).toBe(true);
    await attacker.unsubscribeAsync(`${ROOT}/${id}/+`);
    const acceptedEvents = accepted.filter((m) => m.topic.endsWith('/events'));
    const acceptedStates = accepted.filter((m) => m.topic.endsWith('/state'));

    const arbs = hostileMessages(keys);
    const hostile: Hostile[] = [
      ...fc.sample(arbs.small, { numRuns: SMALL, seed: rng.seed }),
      ...fc.sample(arbs.oversized, { numRuns: OVERSIZED, seed: rng.seed + 1 }),
    ];
    type Send = { topic: string; payload: Buffer; retain: boolean; what: 'hostile' | 'event-replay' | 'state-replay' | 'junk'; reasons?: Reason[] };
    const sends: Send[] = [
      ...hostile.map((h) => ({ topic: `${ROOT}/${id}/${h.kindLevel}`, payload: h.payload, retain: h.retain, what: 'hostile' as const, reasons: h.reasons })),
      ...Array.from({ length: EVENT_REPLAYS }, () => ({ ...rng.pick(acceptedEvents), retain: false, what: 'event-replay' as const })),
      ...Array.from({ length: STATE_REPLAYS }, () => ({ ...rng.pick(acceptedStates), retain: rng.chance(0.5), what: 'state-replay' as const })),
      ...Array.from({ length: JUNK }, (_, i) => ({
        topic: `${ROOT}/${id}/${rng.pick(['junk', 'events2', 'STATE', 'x'])}`,
        payload: Buffer.from(`junk ${i}`),
        retain: false,
        what: 'junk' as const,
      })),
    ];
    for (let i = sends.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [sends[i], sends[j]] = [sends[j]!, sends[i]!];
    }

    const mem0 = memoryKiB(sub.pid);
    const monMem0 = memoryKiB(monitor.pid);
    let peak = mem0.rss;
    const sampler = setInterval(() => {
      if (sub.running) peak = Math.max(peak, memoryKiB(sub.pid).rss);
    }, 100);
    const t0 = Date.now();
    for (let i = 0; i < sends.length; i += 200) {
      await Promise.all(sends.slice(i, i + 200).map((m) => attacker.publishAsync(m.topic, m.payload, { qos: 1, retain: m.retain })));
    }
    await attacker.endAsync();

    // Every discard of the watcher: audited in the job's log, or logged when it names no job (junk topics).
    const count = (what: Send['what']) => sends.filter((s) => s.what === what).length;
    const expectedDiscards = count('hostile') + count('event-replay') + count('junk');
    const discards = () => auditOf(ws, id).filter((l) => l.type === 'rejected' || l.type === 'duplicate').length + rejectLogs(sub.stderr).length;
    const drained = await waitUntil(() => discards() >= expectedDiscards || !sub.running, scale(90_000, 900_000), 200);
    const floodMs = Date.now() - t0;
    clearInterval(sampler);
    expect(sub.running, `watcher died: ${sub.stderr.slice(-2_000)}`).toBe(true);
    expect(drained, `only ${discards()} of ${expectedDiscards} discards audited`).toBe(true);
    const mem1 = memoryKiB(sub.pid);
    // The monitor's registry knows no job: it rejects and logs every single message.
    const monitorDrained = await waitUntil(() => rejectLogs(monitor.stderr).length >= sends.length || !monitor.running, 60_000, 200);
    expect(monitor.running, `monitor died: ${monitor.stderr.slice(-2_000)}`).toBe(true);
    expect(monitorDrained, `monitor logged ${rejectLogs(monitor.stderr).length} of ${sends.length}`).toBe(true);
    const monMem1 = memoryKiB(monitor.pid);

    // The real outcome still resolves the watch; only the real events were printed, once each.
    const done = await runBin('mam-publish', ['--job', id, '--event', 'completed', '--detail', 'legit done', '--attempt-id', '2'], ws);
    expect(done.code, done.stderr).toBe(0);
    const res = await sub.done;
    expect(res.code, res.stderr.slice(-2_000)).toBe(0);
    const lines = jsonLines(res.stdout);
    expect(lines.map((l) => [l.seq, l.event, l.detail])).toEqual([
      [1, 'started', 'legit 0'],
      [2, 'progress', 'legit 1'],
      [3, 'progress', 'legit 2'],
      [4, 'progress', 'legit 3'],
      [5, 'completed', 'legit done'],
    ]);
    expect(res.stdout).not.toContain(FORGED);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    expect(res.stderr.split('\n').filter((l) => /^ERROR/.test(l))).toEqual([]);

    // Each discard with the reason it earned.
    const audit = auditOf(ws, id);
    const tally = new Map<string, number>();
    for (const l of audit.filter((l) => l.type === 'rejected')) tally.set(String(l.reason), (tally.get(String(l.reason)) ?? 0) + 1);
    const want = new Map<string, number>();
    let jsonOrSchema = 0;
    for (const h of hostile) {
      if (h.reasons.length === 1) want.set(h.reasons[0]!, (want.get(h.reasons[0]!) ?? 0) + 1);
      else jsonOrSchema++;
    }
    // QoS 1 allows the broker to deliver a message again after a reconnect; each delivery is audited.
    const reconnected = audit.filter((l) => l.type === 'reconnected').length;
    const atLeast = (n: number, want: number) => (reconnected === 0 ? n === want : n >= want);
    console.log(
      `[chaos] flood audit: ${JSON.stringify(Object.fromEntries(tally))}, want ${JSON.stringify(Object.fromEntries(want))} + ${jsonOrSchema} json|schema; ${reconnected} reconnects`,
    );
    for (const reason of ['hmac', 'topic', 'stale_attempt', 'oversized'] as const) {
      expect(atLeast(tally.get(reason) ?? 0, want.get(reason) ?? 0), `${reason}: ${tally.get(reason)} audited, ${want.get(reason)} sent`).toBe(true);
    }
    expect(atLeast((tally.get('json') ?? 0) + (tally.get('schema') ?? 0), (want.get('json') ?? 0) + (want.get('schema') ?? 0) + jsonOrSchema)).toBe(true);
    expect(atLeast(audit.filter((l) => l.type === 'duplicate').length, EVENT_REPLAYS)).toBe(true);
    expect(rejectLogs(res.stderr).map((l) => l.reason)).toEqual(Array(rejectLogs(res.stderr).length).fill('topic'));
    expect(atLeast(rejectLogs(res.stderr).length, JUNK)).toBe(true);
    expect(audit.filter((l) => l.type === 'ignored_after_terminal' || l.type === 'seq_gap')).toEqual([]);
    // Nothing the attacker sent reached a record.
    expect(recordOf(ws, id)).toMatchObject({ status: 'completed', last_seq: 5, attempt_id: 2 });
    expect(recordOf(ws, otherId)).toMatchObject({ status: 'pending', last_seq: 0 });
    expect(checkRegistry(ws).seqProblems).toEqual([]);

    monitor.kill('SIGTERM');
    const mon = await monitor.done;
    expect(mon.code).toBe(0);
    expect(mon.stdout).toBe('');
    expect(mon.stderr).not.toMatch(/\n\s+at /);

    const mib = (kib: number) => Math.round(kib / 1024);
    const bytes = sends.reduce((n, s) => n + s.payload.length, 0);
    console.log(
      `[chaos] flood: ${sends.length} messages, ${mib(bytes / 1024)} MiB in ${floodMs} ms; watcher RSS ${mib(mem0.rss)} → ${mib(mem1.rss)} MiB (peak sampled ${mib(peak)}, VmHWM ${mib(mem1.hwm)}); monitor ${mib(monMem0.rss)} → ${mib(monMem1.rss)} MiB (VmHWM ${mib(monMem1.hwm)})`,
    );
    const tallyText = [...tally].map(([r, n]) => `${r} ${n}`).join(', ');
    report({
      fault: 'hostile flood on mam-subscribe (fast-check): forged, tampered, malformed, cross-job, stale-attempt, oversized, replayed, junk topics',
      injected: sends.length,
      checked:
        `${hostile.length} hostile (${OVERSIZED} over 256 KiB), ${EVENT_REPLAYS} replayed events, ${STATE_REPLAYS} replayed states, ${JUNK} junk topics, ${mib(bytes / 1024)} MiB; ` +
        `nothing printed but the 5 real events; no crash; audited rejected: ${tallyText}; ${EVENT_REPLAYS} duplicate; ${JUNK} logged (topic); ` +
        `RSS ${mib(mem0.rss)} → ${mib(mem1.rss)} MiB, VmHWM ${mib(mem1.hwm)} MiB (limits +${RSS_GROWTH_LIMIT_MIB} / ${RSS_LIMIT_MIB}); --all monitor of another registry: all ${sends.length} logged, nothing printed, exit 0 on SIGTERM`,
      result: 'pass',
      rss_mib: { before: mib(mem0.rss), after: mib(mem1.rss), hwm: mib(mem1.hwm), monitor_hwm: mib(monMem1.hwm) },
    });
    expect(mib(mem1.rss - mem0.rss)).toBeLessThan(RSS_GROWTH_LIMIT_MIB);
    expect(mib(mem1.hwm)).toBeLessThan(RSS_LIMIT_MIB);
    expect(mib(monMem1.hwm)).toBeLessThan(RSS_LIMIT_MIB);
  });
});
