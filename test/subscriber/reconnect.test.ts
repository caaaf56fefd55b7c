import { readFileSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'mqtt';
import { describe, expect, it, vi } from 'vitest';
import { type TestBroker, describeWithBroker, startAedesBroker, startMosquitto, useBrokerCleanup } from '../helpers/brokers.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';
import { auditOf, brokerWorkspace, publish, publishOk, register } from '../publisher/publish-fixtures.ts';
import { sleep } from '../helpers/wait.ts';
import { startWatcher, stderrBesidesSubscribed } from './watcher.ts';

/**
 * Contract §4, "Reconnect": a watch survives its broker going away and its connection being cut.
 * Subscriptions are restored, and QoS 1 events published while it was cut off (broker up) arrive
 * after the reconnect, each printed once.
 */

describe('mam-subscribe across a broker restart', () => {
  useBrokerCleanup();

  it('reconnects to a restarted broker and gets the outcome; a seq lost while it was down is a seq_gap', async () => {
    const broker = await startAedesBroker({ dataDir: path.join(tempDirForTest('mam-aedes-'), 'db') });
    const ws = brokerWorkspace(broker.port);
    const id = 'a7000001';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    await publishOk(ws, id, 'started');
    await vi.waitFor(() => expect(w.lines()).toHaveLength(1));

    await broker.stop();
    // The agent goes on while the broker is away: recorded on disk, not delivered (exit 2).
    const lost = await publish(ws, id, 'progress', '--attempts', '1');
    expect(lost.code).toBe(2);
    await sleep(1_000);
    expect(w.running).toBe(true);
    const reconnects = () => auditOf(ws, id).filter((l) => l.type === 'reconnected').length;
    expect(reconnects()).toBe(0);
    await broker.restart();
    // Back on the broker (a new CONNACK: the session and its subscriptions are restored), it hears what follows.
    await vi.waitFor(() => expect(reconnects()).toBeGreaterThanOrEqual(1), { timeout: 10_000 });

    await publishOk(ws, id, 'progress', '--detail', 'after restart');
    await publishOk(ws, id, 'completed');
    const exit = await w.exit(15_000);
    expect(exit.code).toBe(0);
    expect(
      w.events().map((e) => [e.seq, e.event]),
      `${exit.stderr}\n${JSON.stringify(auditOf(ws, id))}`,
    ).toEqual([
      [1, 'started'],
      [3, 'progress'],
      [4, 'completed'],
    ]);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
    const audit = auditOf(ws, id);
    expect(audit.filter((l) => l.type === 'seq_gap')).toEqual([expect.objectContaining({ seq: 3, expected: 2 })]);
  });
});

describe('mam-subscribe when the broker goes away mid-watch', () => {
  useBrokerCleanup();

  it('an idle timeout that expires while the broker is unreachable is exit 3, not 2', async () => {
    const broker = await startAedesBroker();
    const ws = brokerWorkspace(broker.port);
    const id = 'a7000005';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id, '--idle-timeout', '2', '--ack-timeout', '0']);
    await w.subscribed();
    await broker.stop();
    const exit = await w.exit(10_000);
    expect(exit.code).toBe(3);
    expect(stderrBesidesSubscribed(exit.stderr)).toMatch(new RegExp(`^ERROR: broker mqtt://127\\.0\\.0\\.1:\\d+ unreachable; unresolved: ${id}$`));
  });

  it('disk fallback on a connection failure: an outcome recorded while the broker is down resolves the watch', async () => {
    const broker = await startAedesBroker();
    const ws = brokerWorkspace(broker.port);
    const id = 'a7000006';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    await publishOk(ws, id, 'started');
    await vi.waitFor(() => expect(w.lines()).toHaveLength(1));
    await broker.stop();
    const done = await publish(ws, id, 'completed', '--detail', 'finished offline', '--attempts', '1');
    expect(done.code).toBe(2);
    const exit = await w.exit(15_000);
    expect(exit.code).toBe(0);
    expect(w.events().map((e) => [e.seq, e.event, e.detail])).toEqual([
      [1, 'started', `Job ${id} started`],
      [2, 'completed', 'finished offline'],
    ]);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
  });
});

function proxyCutTests(start: () => Promise<TestBroker>): void {
  it('events published while the connection is cut arrive after the reconnect, once each', async () => {
    const broker = await start();
    const proxy = await startTcpProxy(broker.host, broker.port);
    try {
      const ws = brokerWorkspace(broker.port);
      const id = 'a7000002';
      await register(ws, id);
      // The watcher goes through the proxy; the agent talks to the broker directly.
      const w = startWatcher(ws, ['--job', id], { env: { MQTT_PORT: String(proxy.port) } });
      await w.subscribed();
      await publishOk(ws, id, 'started');
      await vi.waitFor(() => expect(w.lines()).toHaveLength(1));

      proxy.pause();
      proxy.cut();
      for (let i = 1; i <= 3; i++) await publishOk(ws, id, 'progress', '--detail', `during cut ${i}`);
      await sleep(500);
      expect(w.lines()).toHaveLength(1);
      expect(w.running).toBe(true);
      proxy.resume();

      await vi.waitFor(() => expect(w.lines()).toHaveLength(4), { timeout: 12_000 });
      await publishOk(ws, id, 'completed');
      const exit = await w.exit();
      expect(exit.code).toBe(0);
      expect(w.events().map((e) => [e.seq, e.event, e.detail])).toEqual([
        [1, 'started', `Job ${id} started`],
        [2, 'progress', 'during cut 1'],
        [3, 'progress', 'during cut 2'],
        [4, 'progress', 'during cut 3'],
        [5, 'completed', `Job ${id} completed`],
      ]);
      expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
      const reconnects = auditOf(ws, id).filter((l) => l.type === 'reconnected');
      expect(reconnects.length).toBeGreaterThanOrEqual(1);
      // The session outlived the cut: that is how the queued events came back.
      expect(reconnects.at(-1)).toMatchObject({ session_present: true });
    } finally {
      await proxy.close();
    }
  }, 45_000);
}

/** Whether the broker still holds a session for `clientId`: a clean=false CONNECT tells by `sessionPresent`. */
async function sessionPresent(broker: TestBroker, clientId: string): Promise<boolean> {
  const client = connect(broker.url, { protocolVersion: 4, clientId, clean: false, reconnectPeriod: 0, connectTimeout: 5_000 });
  try {
    return await new Promise<boolean>((resolve, reject) => {
      client.once('connect', (connack) => resolve(connack.sessionPresent));
      client.once('error', reject);
    });
  } finally {
    // A clean CONNECT would discard it again; ending this one as it is keeps the probe honest.
    await client.endAsync(true);
  }
}

/** The watcher's session is its own and outlives a cut; on exit it is cleared (no dead sessions pile up). */
function sessionTests(start: () => Promise<TestBroker & { clientIds(): string[] }>): void {
  it('the session is cleared when the watch ends', async () => {
    const broker = await start();
    const ws = brokerWorkspace(broker.port);
    const id = 'a7000003';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    const ids = broker.clientIds().filter((c) => c.includes('-sub-'));
    expect(ids).toHaveLength(1);
    await publishOk(ws, id, 'completed');
    expect((await w.exit()).code).toBe(0);
    expect(await sessionPresent(broker, ids[0]!)).toBe(false);

    // The control: a watcher killed outright cannot clear its session, and the broker keeps it.
    await register(ws, 'a7000004');
    const killed = startWatcher(ws, ['--job', 'a7000004']);
    await killed.subscribed();
    const killedIds = broker.clientIds().filter((c) => c.includes('-sub-') && c !== ids[0]);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(killedIds).toHaveLength(1);
    expect(await sessionPresent(broker, killedIds[0]!)).toBe(true);
  });
}

describe('mam-subscribe through a TCP proxy that cuts the connection (embedded broker)', () => {
  useBrokerCleanup();
  proxyCutTests(() => startAedesBroker());
  sessionTests(async () => {
    const seen: string[] = [];
    const logger = { info: (o: object) => void seen.push(String((o as { client_id?: string }).client_id)), warn: () => {} };
    const broker = await startAedesBroker({ logger });
    return Object.assign(broker, { clientIds: () => [...new Set(seen)] });
  });
});

describeWithBroker('mosquitto', 'mam-subscribe through a TCP proxy that cuts the connection (mosquitto)', () => {
  proxyCutTests(() => startMosquitto());
  sessionTests(async () => {
    const broker = await startMosquitto();
    const clientIds = () => [...readFileSync(broker.logPath, 'utf8').matchAll(/New client connected from \S+ as (\S+) \(/g)].map((m) => m[1]!);
    return Object.assign(broker, { clientIds: () => [...new Set(clientIds())] });
  });
});
