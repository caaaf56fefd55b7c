import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { type RunResult, type Workspace, makeWorkspace, runBinAsync } from '../helpers/cli.ts';
import { FENCE_LEVEL, connectPlainClient, receivedMessages, wireFence } from '../helpers/mqtt-client.ts';
import { TOPIC_ROOT, auditOf, auditText, brokerWorkspace, deadPort, plain, publish, publishOk, recordOf, register } from './publish-fixtures.ts';

/**
 * `mam-publish` when things go wrong (contract §1 exit codes, §3 retries and scrubbing): the disk
 * stays right, the wire gets nothing it should not, and every failure is one line on stderr.
 */

/** Exactly one `ERROR: …` line on stderr, nothing on stdout, no stack trace. */
function failedWith(r: RunResult, code: number): string {
  expect(r.code).toBe(code);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/^ERROR: [^\n]+\n$/);
  expect(r.stderr).not.toMatch(/\n\s+at /);
  return r.stderr;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = Date.now();
  const value = await fn();
  return { value, ms: Date.now() - t0 };
}

describe('mam-publish with the broker down (nothing listening on the port)', () => {
  it('exit 2 after 3 tries (~0.5 + 1 s of delays); publish_failed audited; the record is right', async () => {
    const ws = brokerWorkspace(await deadPort());
    const id = 'b2000001';
    await register(ws, id);
    const started = await publish(ws, id, 'started', '--attempts', '1');
    expect(failedWith(started, 2)).toMatch(/recorded on disk but not delivered/);
    const { value: done, ms } = await timed(() => publish(ws, id, 'completed'));
    expect(failedWith(done, 2)).toMatch(/seq 2: recorded on disk but not delivered/);
    expect(ms).toBeLessThan(8_000);

    expect(recordOf(ws, id)).toMatchObject({ status: 'completed', last_seq: 2 });
    const audit = auditOf(ws, id);
    const published = audit.filter((l) => l.type === 'published');
    expect(published.map((l) => [l.seq, l.event])).toEqual([
      [1, 'started'],
      [2, 'completed'],
    ]);
    const failed = audit.filter((l) => l.type === 'publish_failed');
    expect(failed.map((l) => [l.seq, l.event, l.attempts])).toEqual([
      [1, 'started', 1],
      [2, 'completed', 3],
    ]);
    expect(String(failed[1]!.reason)).toMatch(/unreachable/);
    // From the commit (audited before the wire) to the give-up: the back-off delays and little
    // more, as refused connections fail at once; a single try does not wait at all.
    const spent = (i: number) => Date.parse(String(failed[i]!.at)) - Date.parse(String(published[i]!.at));
    expect(spent(1)).toBeGreaterThanOrEqual(1_500);
    expect(spent(1)).toBeLessThan(4_000);
    expect(spent(0)).toBeLessThan(500);
    // A terminal recorded on disk is final even though no one heard it.
    failedWith(await publish(ws, id, 'progress', '--attempts', '1'), 5);
  });
});

describe('mam-publish refused by the broker (bad credentials)', () => {
  useBrokerCleanup();

  it('exit 2 at once, without retries: one line naming the broker and the user, never the password', async () => {
    const broker = await startAedesBroker({ auth: { username: 'agent', password: 'right-pass' } });
    const ws = brokerWorkspace(broker.port, { MQTT_USERNAME: 'agent', MQTT_PASSWORD: 'wrong-pass-123' });
    const id = 'b2000009';
    await register(ws, id);
    const r = await publish(ws, id, 'started');
    const line = failedWith(r, 2);
    expect(line).toContain(`mqtt://127.0.0.1:${broker.port}`);
    expect(line).toMatch(/refused user agent/);
    expect(line).toMatch(/bad user name or password|not authorized/);
    const audit = auditOf(ws, id);
    const failed = audit.filter((l) => l.type === 'publish_failed');
    expect(failed).toEqual([expect.objectContaining({ seq: 1, event: 'started', attempts: 3 })]);
    // Not retried: three tries would have slept 1.5 s between the commit and the give-up.
    const published = audit.find((l) => l.type === 'published')!;
    expect(Date.parse(String(failed[0]!.at)) - Date.parse(String(published.at))).toBeLessThan(1_000);
    expect(recordOf(ws, id)).toMatchObject({ status: 'running', last_seq: 1 });
    expect(JSON.stringify(audit) + JSON.stringify(recordOf(ws, id)) + r.stderr).not.toContain('wrong-pass-123');

    // With the right password the same job publishes; the password is scrubbed from a detail.
    const ok = await runBinAsync('mam-publish', ['--job', id, '--event', 'progress', '--detail', 'password right-pass in a detail'], ws, {
      env: { MQTT_PASSWORD: 'right-pass' },
    });
    expect(ok.code).toBe(0);
    expect(plain(ok.stdout).detail).toBe('password <redacted> in a detail');
    expect(auditText(ws, id)).not.toContain('right-pass');
  });
});

describe('mam-publish with MQTT_PASSWORD and no MQTT_USERNAME', () => {
  useBrokerCleanup();

  it('sends an empty user name with the password, as paho does, and is delivered (no "Username is required")', async () => {
    const broker = await startAedesBroker({ auth: { username: '', password: 'token-only-pass' } });
    const ws = brokerWorkspace(broker.port, { MQTT_PASSWORD: 'token-only-pass' });
    const id = 'b200000a';
    await register(ws, id);
    const r = await publish(ws, id, 'started');
    expect(r, r.stderr).toMatchObject({ code: 0 });
    expect(auditOf(ws, id).some((l) => l.type === 'publish_failed')).toBe(false);
    // The watcher side connects the same way.
    const w = await runBinAsync('mam-subscribe', ['--job', id, '--timeout', '1'], ws);
    expect(w.stderr).toMatch(/^SUBSCRIBED b200000a /);
  });
});

describe('mam-publish refusals and usage errors', () => {
  useBrokerCleanup();
  let broker: TestBroker;
  let tap: MqttClient;
  let usageWs: Workspace;
  beforeAll(async () => {
    broker = await startAedesBroker();
    tap = await connectPlainClient(broker.url);
    await tap.subscribeAsync(`${TOPIC_ROOT}/#`, { qos: 1 });
    usageWs = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    await register(usageWs, 'b2000002');
  });
  afterAll(async () => {
    usageWs.cleanup();
    await tap.endAsync(true);
  });
  const wireFor = (id: string) => receivedMessages(tap).filter((m) => m.topic.startsWith(`${TOPIC_ROOT}/${id}/`) && !m.topic.endsWith(`/${FENCE_LEVEL}`));

  it.concurrent.each([
    ['--data not an object', 'progress', ['--data', '[1,2]'], /--data: must be a JSON object/],
    ['--data a string', 'progress', ['--data', '"x"'], /--data: must be a JSON object/],
    ['--data not JSON', 'progress', ['--data', '{nope'], /--data: not valid JSON/],
    ['--data with the reserved hmac_sig', 'progress', ['--data', '{"hmac_sig":"00"}'], /reserved/],
    ['--data with the reserved dispatch_token', 'progress', ['--data', '{"dispatch_token":"x"}'], /reserved/],
    ['--data with the reserved attempt_id', 'completed', ['--data', '{"attempt_id":1}'], /reserved/],
    ['--data over 64 KiB', 'progress', ['--data', JSON.stringify({ big: 'x'.repeat(70 * 1024) })], /--data/],
    ['an unknown event', 'finished', [], /--event/],
    ['--attempts 0', 'progress', ['--attempts', '0'], /--attempts/],
    ['--expect-dispatch-token not 32 hex', 'completed', ['--expect-dispatch-token', 'abc'], /--expect-dispatch-token/],
    ['--heartbeat without started', 'progress', ['--heartbeat', '5'], /--heartbeat/],
    ['an unknown flag', 'progress', ['--bogus'], /unknown option/],
  ])('%s: exit 64, nothing recorded, nothing on the wire', async (_name, event, args, message) => {
    // One job for every row: none of them may leave a trace on it.
    const id = 'b2000002';
    expect(failedWith(await publish(usageWs, id, event, ...args), 64)).toMatch(message);
    expect(recordOf(usageWs, id)).toMatchObject({ status: 'pending', last_seq: 0 });
    expect(auditOf(usageWs, id).map((l) => l.type)).toEqual(['registered']);
    await wireFence(tap, `${TOPIC_ROOT}/${id}`);
    expect(wireFor(id)).toEqual([]);
  });

  it('a bad job id is 64, an unknown job 66', async () => {
    const ws = brokerWorkspace(broker.port);
    expect(failedWith(await publish(ws, 'XYZ', 'started'), 64)).toMatch(/--job/);
    expect(failedWith(await publish(ws, 'b20000ff', 'started'), 66)).toMatch(/b20000ff/);
  });

  it('any event on a terminal job: exit 5, refused audited, the record unchanged, nothing on the wire', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'b2000003';
    await register(ws, id);
    await publishOk(ws, id, 'started');
    await publishOk(ws, id, 'completed');
    await vi.waitFor(() => expect(wireFor(id)).toHaveLength(4));
    const before = recordOf(ws, id);
    const refusals = await Promise.all(['progress', 'completed', 'error', 'started'].map((event) => publish(ws, id, event)));
    for (const r of refusals) expect(failedWith(r, 5)).toMatch(/refused: job b2000003: job is already completed/);
    expect(recordOf(ws, id)).toEqual(before);
    const audit = auditOf(ws, id);
    expect(audit.filter((l) => l.type === 'refused')).toHaveLength(4);
    expect(audit.filter((l) => l.type === 'published')).toHaveLength(2);
    await wireFence(tap, `${TOPIC_ROOT}/${id}`);
    expect(wireFor(id)).toHaveLength(4);
  });

  it('--expect-dispatch-token of another attempt: exit 5 before anything reaches the record or the wire', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'b2000004';
    const rec = await register(ws, id);
    await publishOk(ws, id, 'started');
    const wrong = rec.dispatch_token.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    expect(failedWith(await publish(ws, id, 'completed', '--expect-dispatch-token', wrong), 5)).toMatch(/stale dispatch token/);
    expect(failedWith(await publish(ws, id, 'progress', '--attempt-id', '2'), 5)).toMatch(/stale attempt 2/);
    expect(recordOf(ws, id)).toMatchObject({ status: 'running', last_seq: 1 });
    expect(auditOf(ws, id).filter((l) => l.type === 'refused')).toHaveLength(2);
    // The right token is taken.
    const ok = await publishOk(ws, id, 'completed', '--expect-dispatch-token', rec.dispatch_token);
    expect(plain(ok.stdout)).toMatchObject({ seq: 2, event: 'completed' });
    await vi.waitFor(() => expect(wireFor(id)).toHaveLength(4));
    await wireFence(tap, `${TOPIC_ROOT}/${id}`);
    expect(wireFor(id).map((m) => plain(m.payload).seq)).toEqual([1, 1, 2, 2]);
  });

  it('after a redispatch a terminal event without the current token or attempt is refused (5)', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'b2000005';
    await register(ws, id);
    await publishOk(ws, id, 'started');
    await publishOk(ws, id, 'completed');
    const r = await redispatch(ws, id);
    expect(r.code).toBe(0);
    const rec = recordOf(ws, id);
    expect(rec).toMatchObject({ status: 'pending', attempt_id: 2 });
    expect(failedWith(await publish(ws, id, 'completed'), 5)).toMatch(/attempt 2/);
    const ok = await publishOk(ws, id, 'completed', '--attempt-id', '2');
    expect(plain(ok.stdout)).toMatchObject({ seq: 3, data: { attempt_id: 2, dispatch_token: rec.dispatch_token } });
  });

  it('--detail: absolute paths and the workspace root are scrubbed on the wire and in the audit', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'b2000006';
    await register(ws, id);
    const detail = `failed in ${ws.root}/src/app.ts:12 reading /etc/passwd; root is ${ws.root}`;
    const r = await publishOk(ws, id, 'error', '--detail', detail);
    const expected = 'failed in <path>:12 reading <path>; root is <workspace>';
    expect(plain(r.stdout).detail).toBe(expected);
    await vi.waitFor(() => expect(wireFor(id)).toHaveLength(2));
    expect(plain(wireFor(id)[0]!.payload).detail).toBe(expected);
    const published = auditOf(ws, id).find((l) => l.type === 'published')!;
    expect((published.payload as { detail: string }).detail).toBe(expected);
    for (const text of [wireFor(id)[0]!.payload, wireFor(id)[1]!.payload, JSON.stringify(auditOf(ws, id))]) {
      expect(text).not.toContain(ws.root);
      expect(text).not.toContain('/etc/passwd');
    }
  });

  it('the default detail is "Job <id> <event>"', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'b2000007';
    await register(ws, id);
    expect(plain((await publishOk(ws, id, 'started')).stdout).detail).toBe(`Job ${id} started`);
  });
});

function redispatch(ws: Workspace, id: string): Promise<RunResult> {
  return runBinAsync('mam', ['redispatch', '--job', id], ws);
}

describe('mam-publish stdout', () => {
  useBrokerCleanup();

  // `--data` numbers are LosslessNumbers inside; JSON.stringify would print them as objects.
  it('prints the event as it went on the wire, --data numbers included', async () => {
    const broker = await startAedesBroker();
    const ws = brokerWorkspace(broker.port);
    const id = 'b2000008';
    await register(ws, id);
    const tapper = await connectPlainClient(broker.url);
    await tapper.subscribeAsync(`${TOPIC_ROOT}/${id}/events`, { qos: 1 });
    const r = await publishOk(ws, id, 'progress', '--data', '{"files": 3, "ratio": 0.5}');
    await vi.waitFor(() => expect(receivedMessages(tapper)).toHaveLength(1));
    await tapper.endAsync();
    expect(r.stdout).toBe(`${receivedMessages(tapper)[0]!.payload}\n`);
  });
});
