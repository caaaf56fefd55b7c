import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseWireJson } from '../../src/core/wire/canonical-json.ts';
import { verifyPayload } from '../../src/core/wire/signature.ts';
import { type TestBroker, describeWithBroker, startAedesBroker, startMosquitto, useBrokerCleanup } from '../helpers/brokers.ts';
import { type CollectedMessage, collectMessages, connectPlainClient, receivedMessages, wireFence } from '../helpers/mqtt-client.ts';
import {
  TOPIC_ROOT,
  auditOf,
  auditText,
  brokerWorkspace,
  eventsTopicOf,
  hasPython,
  plain,
  publishOk,
  pythonVerifies,
  recordOf,
  register,
  stateTopicOf,
} from './publish-fixtures.ts';

/**
 * `mam-publish` against real brokers, read back with a plain MQTT client (never the project's own
 * subscriber): contract §3, issue 3's wire tests.
 */

/** Subscribes to everything of one job before anything is published; read with receivedMessages(). */
async function tap(broker: TestBroker, id: string): Promise<MqttClient> {
  const client = await connectPlainClient(broker.url);
  await client.subscribeAsync(`${TOPIC_ROOT}/${id}/#`, { qos: 1 });
  return client;
}

async function waitForCount(client: MqttClient, id: string, n: number): Promise<CollectedMessage[]> {
  await vi.waitFor(() => expect(receivedMessages(client).length).toBeGreaterThanOrEqual(n), { timeout: 5_000 });
  // Nothing more may follow: exactly event + state per publish.
  return wireFence(client, `${TOPIC_ROOT}/${id}`);
}

function wireTests(start: () => Promise<TestBroker>): void {
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await start();
  });

  it('a lifecycle puts exactly event + state per publish on the wire: seqs 1..n, signed, on the job topics', async () => {
    const id = 'a1000001';
    const ws = brokerWorkspace(broker.port);
    const rec = await register(ws, id);
    const client = await tap(broker, id);
    const events = ['started', 'progress', 'permission_required', 'completed'];
    const stdouts: string[] = [];
    for (const event of events) stdouts.push((await publishOk(ws, id, event, '--detail', `step ${event}`)).stdout);
    const got = await waitForCount(client, id, 2 * events.length);
    await client.endAsync();
    expect(got).toHaveLength(2 * events.length);

    const after = recordOf(ws, id);
    expect(after).toMatchObject({ status: 'completed', last_seq: events.length, attempt_id: 1 });
    const statuses = ['running', 'running', 'running', 'completed'];
    events.forEach((event, i) => {
      const [ev, st] = [got[2 * i]!, got[2 * i + 1]!];
      expect(ev.topic).toBe(eventsTopicOf(id));
      expect(st.topic).toBe(stateTopicOf(id));
      expect(ev.qos).toBe(1);
      expect(st.qos).toBe(1);
      // A live delivery never carries the retain flag (MQTT-3.3.1-9): the late subscriber checks it.
      expect(ev.retain).toBe(false);
      const e = plain(ev.payload);
      const s = plain(st.payload);
      expect(e).toMatchObject({ schema_version: 1, seq: i + 1, job_id: id, event, detail: `step ${event}` });
      expect(e.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      expect(e.data).toMatchObject({ dispatch_token: rec.dispatch_token, attempt_id: 1 });
      expect(e.data.hmac_sig).toMatch(/^[0-9a-f]{64}$/);
      expect(s).toMatchObject({ schema_version: 1, seq: i + 1, job_id: id, event: 'state', status: statuses[i], last_event: event });
      expect(s.data).toMatchObject({ dispatch_token: rec.dispatch_token, attempt_id: 1 });
      for (const text of [ev.payload, st.payload]) {
        expect(verifyPayload(parseWireJson(text), rec.auth_token)).toBe(true);
        expect(verifyPayload(parseWireJson(text), `${rec.auth_token}x`)).toBe(false);
      }
      // Compact on the wire; the same payload was audited (written before the wire).
      expect(ev.payload).toBe(JSON.stringify(e));
      // stdout: the event, one JSON line.
      expect(stdouts[i]!.endsWith('\n')).toBe(true);
      expect(stdouts[i]!.trim().split('\n')).toHaveLength(1);
      expect(JSON.parse(stdouts[i]!)).toEqual(e);
    });
    const published = auditOf(ws, id).filter((l) => l.type === 'published');
    expect(published.map((l) => l.seq)).toEqual([1, 2, 3, 4]);
    expect(published.map((l) => l.payload)).toEqual(events.map((_, i) => plain(got[2 * i]!.payload)));
  });

  it('a late subscriber gets the retained terminal event and state (retain=true), and nothing else', async () => {
    const id = 'a1000002';
    const ws = brokerWorkspace(broker.port);
    const rec = await register(ws, id);
    for (const event of ['started', 'progress', 'error']) await publishOk(ws, id, event);
    const late = await connectPlainClient(broker.url);
    const got = await collectMessages(late, `${TOPIC_ROOT}/${id}/#`, { timeoutMs: 1_000 });
    await late.endAsync();
    const byTopic = Object.fromEntries(got.map((m) => [m.topic, m]));
    expect(got).toHaveLength(2);
    expect(byTopic[eventsTopicOf(id)]).toMatchObject({ retain: true, qos: 1 });
    expect(byTopic[stateTopicOf(id)]).toMatchObject({ retain: true, qos: 1 });
    expect(plain(byTopic[eventsTopicOf(id)]!.payload)).toMatchObject({ seq: 3, event: 'error' });
    expect(plain(byTopic[stateTopicOf(id)]!.payload)).toMatchObject({ seq: 3, event: 'state', status: 'error', last_event: 'error' });
    for (const m of got) expect(verifyPayload(parseWireJson(m.payload), rec.auth_token)).toBe(true);
  });

  it('a non-terminal event is not retained; its state is', async () => {
    const id = 'a1000003';
    const ws = brokerWorkspace(broker.port);
    await register(ws, id);
    await publishOk(ws, id, 'started');
    await publishOk(ws, id, 'progress');
    const late = await connectPlainClient(broker.url);
    const got = await collectMessages(late, `${TOPIC_ROOT}/${id}/#`, { timeoutMs: 800 });
    await late.endAsync();
    expect(got.map((m) => [m.topic, m.retain, plain(m.payload).seq])).toEqual([[stateTopicOf(id), true, 2]]);
  });

  it('every secret the configuration holds is scrubbed from a detail: password, dispatch and fleet secrets, dashboard token', async () => {
    const id = 'a1000014';
    const secrets = {
      MQTT_PASSWORD: 'pw-0123456789abcdef',
      MAM_DISPATCH_SECRET: 'dispatch-0123456789abcdef',
      MAM_FLEET_SECRET: 'fleet-0123456789abcdef',
      MAM_DASHBOARD_TOKEN: 'dashboard-0123456789abcdef',
    };
    const ws = brokerWorkspace(broker.port, secrets);
    await register(ws, id);
    const client = await tap(broker, id);
    const r = await publishOk(ws, id, 'started', '--detail', `a ${Object.values(secrets).join(' b ')} c`);
    const got = await waitForCount(client, id, 2);
    await client.endAsync();
    expect(plain(got[0]!.payload).detail).toBe('a <redacted> b <redacted> b <redacted> b <redacted> c');
    const everything = [...got.map((m) => m.payload), r.stdout, r.stderr, auditText(ws, id)].join('\n');
    for (const secret of Object.values(secrets)) expect(everything).not.toContain(secret);
  });

  it('the token never appears on the wire, on stdout/stderr or in the audit log', async () => {
    const id = 'a1000004';
    const ws = brokerWorkspace(broker.port);
    const rec = await register(ws, id);
    const client = await tap(broker, id);
    const outputs: string[] = [];
    for (const event of ['started', 'progress', 'completed']) {
      const r = await publishOk(ws, id, event, '--detail', `token is ${rec.auth_token} here`, '--data', JSON.stringify({ note: 'n' }));
      outputs.push(r.stdout, r.stderr);
    }
    const got = await waitForCount(client, id, 6);
    await client.endAsync();
    const everything = [...got.map((m) => m.payload), ...outputs, auditText(ws, id)].join('\n');
    expect(everything).not.toContain(rec.auth_token);
    // The detail that named it was scrubbed, not dropped.
    expect(plain(got[0]!.payload).detail).toBe('token is <redacted> here');
  });

  it('6 concurrent publishers to one job: unique, gap-free seqs on disk and on the wire', async () => {
    const id = 'a1000005';
    const ws = brokerWorkspace(broker.port);
    const rec = await register(ws, id);
    const client = await tap(broker, id);
    await publishOk(ws, id, 'started');
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => publishOk(ws, id, 'progress', '--detail', `worker ${i}`)));
    const printedSeqs = results.map((r) => plain(r.stdout).seq as number).sort((a, b) => a - b);
    expect(printedSeqs).toEqual([2, 3, 4, 5, 6, 7]);
    expect(recordOf(ws, id)).toMatchObject({ last_seq: 7, status: 'running' });
    const audited = auditOf(ws, id)
      .filter((l) => l.type === 'published')
      .map((l) => l.seq as number);
    expect([...audited].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7]);

    const got = await waitForCount(client, id, 14);
    await client.endAsync();
    expect(got).toHaveLength(14);
    const wireEvents = got.filter((m) => m.topic === eventsTopicOf(id)).map((m) => plain(m.payload));
    const wireStates = got.filter((m) => m.topic === stateTopicOf(id)).map((m) => plain(m.payload));
    expect(wireEvents.map((e) => e.seq).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(wireStates.map((s) => s.seq).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(wireEvents.filter((e) => e.event === 'progress').map((e) => e.detail)).size).toBe(6);
    for (const m of got) expect(verifyPayload(parseWireJson(m.payload), rec.auth_token)).toBe(true);
  });
}

describe('mam-publish on the embedded broker (aedes)', () => {
  useBrokerCleanup();
  wireTests(() => startAedesBroker());
});

describeWithBroker('mosquitto', 'mam-publish on mosquitto', () => {
  wireTests(() => startMosquitto());
});

describe.skipIf(!hasPython())('mam-publish: Python verifies what went on the wire', () => {
  useBrokerCleanup();
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  afterAll(() => broker.stop());

  it('json.dumps(sort_keys=True, separators=(",", ":")) + hmac accepts the event and the state', async () => {
    const id = 'a1000006';
    const ws = brokerWorkspace(broker.port);
    const rec = await register(ws, id);
    const client = await tap(broker, id);
    // Written by hand: JSON.stringify would already have re-spelled 1e16 and 1.0.
    const data = '{"ratio": 0.5, "tiny": 1e-7, "big": 1e16, "one": 1.0, "count": 3, "nested": {"\u00e9": ["😀", null, true]}, "z": "ünïcode"}';
    await publishOk(ws, id, 'progress', '--detail', 'café — 😀 "quoted" \\ back', '--data', data);
    const got = await waitForCount(client, id, 2);
    await client.endAsync();
    expect(got).toHaveLength(2);
    for (const m of got) {
      expect(pythonVerifies(m.payload, rec.auth_token)).toBe(true);
      expect(pythonVerifies(m.payload, 'not-the-token')).toBe(false);
    }
    // The wire text is ASCII-only and spells numbers as Python does.
    expect(got[0]!.payload).toMatch(/^[\x20-\x7e]+$/);
    expect(got[0]!.payload).toContain('"tiny":1e-07');
    expect(got[0]!.payload).toContain('"big":1e+16');
    expect(got[0]!.payload).toContain('"one":1.0');
  });
});
