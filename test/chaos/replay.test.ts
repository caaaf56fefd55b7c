import type { MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { type Workspace, makeWorkspace } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { jsonLines, killAll, report, runBin, sleep, spawnBin, waitUntil } from './chaos-kit.ts';
import { auditOf } from './disk-invariants.ts';

/**
 * Replayed genuine events (issue 27, item 2). Someone on the broker keeps a copy of a job's signed
 * `progress` events — valid HMAC, current attempt — and sends them again after the agent died. A
 * fresh watcher must not take them for a sign of life: it ends idle on time (exit 2), prints none of
 * them, and audits each one `rejected`/`replayed`. With the agent alive, the same replays change
 * nothing: the watcher prints exactly the agent's new events and ends with its outcome.
 */

const ROOT = 'python/mqtt/jobs';
const REPLAY_GAP_MS = 1_000;

let broker: AedesTestBroker;
let attacker: MqttClient;
const workspaces: Workspace[] = [];

beforeAll(async () => {
  broker = await startAedesBroker();
  attacker = await connectPlainClient(broker.url);
});

afterEach(() => killAll());

afterAll(async () => {
  await attacker?.endAsync(true);
  for (const ws of workspaces) ws.cleanup();
  await broker?.stop();
});

/** A job that ran `started` and six `progress` events, and the six signed progress payloads as the broker carried them. */
async function jobWithCapturedProgress(): Promise<{ ws: Workspace; id: string; captured: Buffer[] }> {
  const ws = makeWorkspace({ MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port) });
  workspaces.push(ws);
  const reg = await runBin('mam-register', ['--brief', 'replayed events'], ws);
  const id = (JSON.parse(reg.stdout) as { job_id: string }).job_id;
  const captured: Buffer[] = [];
  const topic = `${ROOT}/${id}/events`;
  const keep = (t: string, payload: Buffer) => {
    if (t === topic && (JSON.parse(payload.toString('utf8')) as { event: string }).event === 'progress') captured.push(Buffer.from(payload));
  };
  attacker.on('message', keep);
  await attacker.subscribeAsync(topic, { qos: 1 });
  for (const event of ['started', 'progress', 'progress', 'progress', 'progress', 'progress', 'progress']) {
    const r = await runBin('mam-publish', ['--job', id, '--event', event, '--detail', `genuine ${event}`], ws);
    expect(r.code, r.stderr).toBe(0);
  }
  expect(await waitUntil(() => captured.length === 6, 10_000)).toBe(true);
  await attacker.unsubscribeAsync(topic);
  attacker.off('message', keep);
  return { ws, id, captured };
}

const replayedAudit = (ws: Workspace, id: string) => auditOf(ws, id).filter((l) => l.type === 'rejected' && l.reason === 'replayed');

describe('replayed genuine events (issue 27)', () => {
  it('after the agent died: a fresh watcher ends idle while the replays still come, prints none, audits each', { timeout: 60_000 }, async () => {
    const { ws, id, captured } = await jobWithCapturedProgress();
    // --ack-timeout 0: the agent had started long before, so the watch allows idle time only (contract §4).
    const sub = spawnBin('mam-subscribe', ['--job', id, '--idle-timeout', '3', '--ack-timeout', '0'], ws);
    await sub.waitStderr(/^SUBSCRIBED/m);
    let sentBeforeExit = 0;
    for (const payload of captured) {
      if (!sub.running) break;
      await attacker.publishAsync(`${ROOT}/${id}/events`, payload, { qos: 1 });
      sentBeforeExit++;
      await sleep(REPLAY_GAP_MS);
    }
    const res = await sub.done;
    report({
      fault: 'replayed genuine progress events after the agent died',
      injected: sentBeforeExit,
      checked: 'fresh mam-subscribe --idle-timeout 3: exit code, stdout, audit',
      result: `exit ${res.code} after ${res.ms} ms; ${sentBeforeExit} of ${captured.length} replays sent before it ended`,
    });

    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toMatch(new RegExp(`job ${id}: idle timeout`));
    // It ended while the attacker still had replays to send: they kept nothing alive.
    expect(sentBeforeExit).toBeLessThan(captured.length);
    expect(jsonLines(res.stdout)).toEqual([]);
    const audited = replayedAudit(ws, id);
    expect(audited.length).toBeGreaterThanOrEqual(1);
    expect(audited.every((l) => l.event === 'progress' && l.seq >= 2 && l.seq <= 7)).toBe(true);
  });

  it('with the agent alive: the replays are audited, the new events printed once each, the outcome as ever', { timeout: 60_000 }, async () => {
    const { ws, id, captured } = await jobWithCapturedProgress();
    const sub = spawnBin('mam-subscribe', ['--job', id], ws);
    await sub.waitStderr(/^SUBSCRIBED/m);
    for (const [i, payload] of captured.entries()) {
      await attacker.publishAsync(`${ROOT}/${id}/events`, payload, { qos: 1 });
      if (i === 2) expect((await runBin('mam-publish', ['--job', id, '--event', 'progress', '--detail', 'fresh'], ws)).code).toBe(0);
    }
    expect(await waitUntil(() => replayedAudit(ws, id).length === 6, 10_000)).toBe(true);
    expect((await runBin('mam-publish', ['--job', id, '--event', 'completed'], ws)).code).toBe(0);
    const res = await sub.done;

    expect(res.code, res.stderr).toBe(0);
    expect(jsonLines(res.stdout).map((l) => [l.seq, l.event])).toEqual([
      [8, 'progress'],
      [9, 'completed'],
    ]);
    expect(replayedAudit(ws, id).map((l) => l.seq)).toEqual([2, 3, 4, 5, 6, 7]);
  });
});
