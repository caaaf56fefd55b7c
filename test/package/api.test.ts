import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import * as publicApi from '../../src/api/index.ts';
import {
  type JobRecord,
  type MamConfig,
  NotDelivered,
  NothingPickable,
  TransitionRefused,
  UsageError,
  type WatchedPayload,
  buildEventPayload,
  canonicalJson,
  computeHmac,
  eventsTopic,
  loadConfig,
  parseWireJson,
  signPayload,
  stateTopic,
  verifyPayload,
  wireJson,
} from '../../src/api/index.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT, type Workspace, makeWorkspace, runBin, runBinAsync } from '../helpers/cli.ts';
import { freePort } from '../helpers/free-port.ts';
import { connectPlainClient, receivedMessages } from '../helpers/mqtt-client.ts';
import { withoutLeaks } from '../helpers/in-process.ts';
import { waitUntil } from '../helpers/wait.ts';

/**
 * The operations, each checked to leave no socket, timer or handle behind in the caller's process
 * once it has settled (test/helpers/in-process.ts): an embedding program lives on after each call.
 */
const checked =
  <A extends unknown[], R>(name: string, op: (...args: A) => Promise<R>) =>
  (...args: A): Promise<R> =>
    withoutLeaks(`api.${name}`, () => op(...args));
const register = checked('register', publicApi.register);
const publish = checked('publish', publicApi.publish);
const watch = checked('watch', publicApi.watch);
const close = checked('close', publicApi.close);
const show = checked('show', publicApi.show);
const pick = checked('pick', publicApi.pick);
const redispatch = checked('redispatch', publicApi.redispatch);

/**
 * The library API (src/api) as a program that embeds MAM uses it: its operations end to end against
 * the embedded broker, with only what `src/api/index.ts` exports, held against the commands.
 */

interface Api {
  config: MamConfig;
}

/** A workspace of its own, pointed at `port`; removed when the test ends. */
function workspace(port: number, env: NodeJS.ProcessEnv = {}): { api: Api; ws: Workspace } {
  const ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(port), ...env });
  onTestFinished(() => ws.cleanup());
  return { api: { config: loadConfig(ws.env, ws.root) }, ws };
}

/** The record file as on disk, token and all: what a test reads behind the API's back. */
function recordText(api: Api, jobId: string): string {
  return readFileSync(path.join(api.config.registryDir, `${jobId}.json`), 'utf8');
}

const recordOnDisk = (api: Api, jobId: string): JobRecord => JSON.parse(recordText(api, jobId)) as JobRecord;

async function registerJob(api: Api, jobId: string): Promise<void> {
  await register({ config: api.config, jobId, brief: 'api test' });
}

/** Starts a watch of `jobId` and resolves once the broker acknowledged its subscription. */
async function startWatch(api: Api, jobId: string, seen: WatchedPayload[], wireTexts: string[] = []) {
  let subscribed!: () => void;
  const ready = new Promise<void>((resolve) => (subscribed = resolve));
  const outcome = watch({
    config: api.config,
    jobIds: [jobId],
    timeouts: { timeoutSec: 20 },
    onEvent: (payload, wireText) => {
      seen.push(payload);
      wireTexts.push(wireText);
    },
    onSubscribed: () => subscribed(),
  });
  await Promise.race([ready, outcome.then((o) => Promise.reject(new Error(`watch ended before SUBACK: ${o.reason}`)))]);
  return outcome;
}

describe('library API: publish and watch', () => {
  useBrokerCleanup();
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  afterAll(() => broker.stop());

  it('a watch sees what publish sends, verified, and resolves all_completed', async () => {
    const { api } = workspace(broker.port);
    const jobId = 'ab000001';
    await registerJob(api, jobId);
    const seen: WatchedPayload[] = [];
    const wireTexts: string[] = [];
    const outcome = startWatch(api, jobId, seen, wireTexts);

    await publish({ ...api, jobId, event: 'started' });
    const progress = await publish({ ...api, jobId, event: 'progress', detail: 'step 1', data: { step: 1, ratio: 0.5, tags: ['a'] } });
    const completed = await publish({ ...api, jobId, event: 'completed' });

    expect(await outcome).toMatchObject({ reason: 'all_completed', monitor: false, unresolved: [] });
    expect(seen.map((p) => [p.event, p.seq])).toEqual([
      ['started', 1],
      ['progress', 2],
      ['completed', 3],
    ]);
    // publish resolves with the payload it sent, as plain values; the watch hands over the same.
    expect(progress.data).toMatchObject({ step: 1, ratio: 0.5, tags: ['a'], attempt_id: 1 });
    expect(seen[1]).toEqual(progress);
    expect(seen[2]).toEqual(completed);
    const { auth_token } = recordOnDisk(api, jobId);
    for (const text of wireTexts) expect(verifyPayload(parseWireJson(text), auth_token)).toBe(true);
    expect(recordOnDisk(api, jobId)).toMatchObject({ status: 'completed', last_seq: 3 });
  });

  it('a forged message (signed with another key) never reaches onEvent, and is audited', async () => {
    const { api } = workspace(broker.port);
    const jobId = 'ab000002';
    await registerJob(api, jobId);
    const record = recordOnDisk(api, jobId);
    const seen: WatchedPayload[] = [];
    const outcome = startWatch(api, jobId, seen);

    // Everything right but the key: same job, topic, dispatch token and attempt, a seq not yet used.
    const forged = signPayload(
      buildEventPayload({ jobId, seq: 1, event: 'completed', detail: 'forged', dispatchToken: record.dispatch_token, attemptId: record.attempt_id }),
      'not-the-job-token-but-long-enough',
    );
    const client = await connectPlainClient(broker.url);
    await client.publishAsync(eventsTopic(api.config.topicRoot, jobId), wireJson(forged), { qos: 1 });
    // Gone before the watch ends, which is checked for what it leaves behind.
    await client.endAsync();
    const events = path.join(api.config.logDir, jobId, 'events.ndjson');
    expect(await waitUntil(() => readFileSync(events, 'utf8').includes('"reason":"hmac"'), 5_000)).toBe(true);
    expect(seen).toEqual([]);

    const genuine = await publish({ ...api, jobId, event: 'completed', detail: 'genuine' });
    expect(await outcome).toMatchObject({ reason: 'all_completed' });
    expect(seen).toEqual([genuine]);
    expect(genuine.detail).toBe('genuine');
  });

  it('watch: an aborted signal ends it with stopped; an exception in onEvent rejects it', async () => {
    const { api } = workspace(broker.port);
    const jobId = 'ab000003';
    await registerJob(api, jobId);

    const controller = new AbortController();
    const stopped = startWatch(api, jobId, []);
    const aborted = watch({ ...api, jobIds: [jobId], onEvent: () => undefined, signal: controller.signal });
    controller.abort();
    expect(await aborted).toMatchObject({ reason: 'stopped', unresolved: [jobId] });

    const failing = watch({
      ...api,
      jobIds: [jobId],
      onEvent: () => {
        throw new Error('consumer bug');
      },
    });
    await publish({ ...api, jobId, event: 'completed' });
    await expect(failing).rejects.toThrow('consumer bug');
    expect(await stopped).toMatchObject({ reason: 'all_completed' });
  });

  it('publish refuses what mam-publish refuses, with the same typed errors', async () => {
    const { api } = workspace(broker.port);
    const jobId = 'ab000004';
    await registerJob(api, jobId);

    await expect(publish({ ...api, jobId, event: 'progress', data: { hmac_sig: 'x' } })).rejects.toThrow(UsageError);
    await expect(publish({ ...api, jobId, event: 'progress', data: { x: Number.NaN } })).rejects.toThrow(UsageError);
    await expect(publish({ ...api, jobId, event: 'progress', data: { big: 'x'.repeat(70_000) } })).rejects.toThrow(/64|65536/);
    await expect(publish({ ...api, jobId, event: 'finished' as never })).rejects.toThrow(UsageError);
    await expect(publish({ ...api, jobId: 'NOT-AN-ID', event: 'progress' })).rejects.toThrow(UsageError);
    await expect(watch({ ...api, jobIds: [], onEvent: () => undefined })).rejects.toThrow(UsageError);
    expect(recordOnDisk(api, jobId).last_seq).toBe(0);

    await publish({ ...api, jobId, event: 'completed' });
    await expect(publish({ ...api, jobId, event: 'progress' })).rejects.toThrow(TransitionRefused);
  });

  it('publish to an unreachable broker: NotDelivered, recorded on disk, the token not shown by inspect', async () => {
    const { api } = workspace(await freePort());
    const jobId = 'ab000005';
    await registerJob(api, jobId);
    const err = await publish({ ...api, jobId, event: 'started', attempts: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotDelivered);
    const notDelivered = err as NotDelivered;
    expect(notDelivered.result.seq).toBe(1);
    const { auth_token } = recordOnDisk(api, jobId);
    expect(inspect(err)).not.toContain(auth_token);
    expect(JSON.stringify(err)).not.toContain(auth_token);
    expect(recordOnDisk(api, jobId)).toMatchObject({ status: 'running', last_seq: 1 });
  });
});

describe("library API: the commands' operations, through the transition rules", () => {
  useBrokerCleanup();
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  afterAll(() => broker.stop());

  /** A state payload with what differs from job to job masked: what is left must be the same. */
  function shapeOf(wireText: string, jobId: string): unknown {
    const p = JSON.parse(wireText) as Record<string, unknown> & { data: Record<string, unknown>; detail: string };
    return {
      ...p,
      job_id: '<id>',
      timestamp: typeof p.timestamp,
      detail: p.detail.replace(jobId, '<id>'),
      data: { ...p.data, dispatch_token: typeof p.data.dispatch_token, hmac_sig: typeof p.data.hmac_sig },
    };
  }

  it('close publishes the signed, retained state that mam-close publishes', async () => {
    const { api, ws } = workspace(broker.port);
    const [viaApi, viaCli] = ['ab000010', 'ab000011'];
    await registerJob(api, viaApi);
    await registerJob(api, viaCli);
    const listener = await connectPlainClient(broker.url);
    onTestFinished(() => listener.endAsync());
    await listener.subscribeAsync(stateTopic(api.config.topicRoot, '+'), { qos: 1 });

    const closed = await close({ ...api, jobId: viaApi, request: 'cancelled' });
    const cli = await runBinAsync('mam-close', ['--job', viaCli, '--request', 'cancelled'], ws);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stderr).toBe('');
    expect(closed.notice).toBeUndefined();
    expect(closed.record).toEqual(await show({ ...api, jobId: viaApi }));
    expect(closed.record).toMatchObject({ status: 'cancelled', detail: 'cancelled' });
    expect(closed.record).not.toHaveProperty('auth_token');

    const sent = (jobId: string) => receivedMessages(listener).find((m) => m.topic === stateTopic(api.config.topicRoot, jobId));
    expect(await waitUntil(() => sent(viaApi) !== undefined && sent(viaCli) !== undefined, 5_000)).toBe(true);
    for (const jobId of [viaApi, viaCli]) {
      expect(verifyPayload(parseWireJson(sent(jobId)!.payload), recordOnDisk(api, jobId).auth_token)).toBe(true);
    }
    const apiState = JSON.parse(sent(viaApi)!.payload) as Record<string, unknown>;
    expect(apiState).toMatchObject({ job_id: viaApi, status: 'cancelled', last_event: 'cancelled', seq: 1 });
    // The same message, field for field and in the same order, as the command's.
    expect(Object.keys(apiState)).toEqual(Object.keys(JSON.parse(sent(viaCli)!.payload) as object));
    expect(shapeOf(sent(viaApi)!.payload, viaApi)).toEqual(shapeOf(sent(viaCli)!.payload, viaCli));

    // Retained, as the command's: a watcher that comes later still learns of the close.
    const late = await connectPlainClient(broker.url);
    onTestFinished(() => late.endAsync());
    await late.subscribeAsync(stateTopic(api.config.topicRoot, viaApi), { qos: 1 });
    expect(await waitUntil(() => receivedMessages(late).some((m) => m.retain && m.payload === sent(viaApi)!.payload), 5_000)).toBe(true);
  });

  it("register with no limits takes the configuration's, as mam-register does; a limit given overrides it", async () => {
    const { api, ws } = workspace(broker.port, { MAM_HEARTBEAT_SEC: '7', MAM_HEARTBEAT_MISSES: '3', MAM_ACK_TIMEOUT_S: '11' });
    const defaults = {
      heartbeat_sec: 7,
      heartbeat_misses: 3,
      ack_timeout_sec: 11,
      idle_timeout_sec: 21,
      timeout_sec: 3600,
      transport: 'herdr',
      depends_on: [],
    };

    const plain = await register({ ...api, brief: 'defaults' });
    expect(plain).toMatchObject({ status: 'pending', brief: 'defaults', ...defaults });
    expect(plain).not.toHaveProperty('auth_token');
    const cli = runBin('mam-register', ['--brief', 'defaults', '--json'], ws);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject(defaults);

    const faster = await register({ ...api, brief: 'faster', heartbeatSec: 2, dependsOn: [plain.job_id] });
    expect(faster).toMatchObject({ heartbeat_sec: 2, heartbeat_misses: 3, ack_timeout_sec: 11, idle_timeout_sec: 6, depends_on: [plain.job_id] });
    expect(await register({ ...api, brief: 'wall', timeoutSec: 90, idleTimeoutSec: 50 })).toMatchObject({
      timeout_sec: 90,
      idle_timeout_sec: 50,
      heartbeat_sec: 7,
    });

    // What the flags refuse, the API refuses, before anything is written.
    const before = readdirSync(api.config.registryDir).sort();
    await expect(register({ ...api, brief: 'x', heartbeatSec: 0 })).rejects.toThrow(UsageError);
    await expect(register({ ...api, brief: 'x', heartbeatMisses: 1.5 })).rejects.toThrow(UsageError);
    await expect(register({ ...api, brief: 'x', to: 'not a name!' })).rejects.toThrow(UsageError);
    await expect(register({ ...api, brief: 'x', to: 'alice', agentSession: 'bob' })).rejects.toThrow(/different agents/);
    expect(readdirSync(api.config.registryDir).sort()).toEqual(before);
  });

  it('exports no registry: no Registry class, no patch or adopt that would skip the transition rules', () => {
    expect(Object.keys(publicApi)).not.toContain('Registry');
    const members = Object.entries(publicApi).flatMap(([name, value]) => [
      name,
      ...(typeof value === 'function' && value.prototype ? Object.getOwnPropertyNames(value.prototype) : []),
      ...(typeof value === 'object' && value !== null ? Object.keys(value) : []),
    ]);
    for (const bypass of ['Registry', 'patch', 'adopt', 'withLock']) expect(members).not.toContain(bypass);
  });

  it('a transition the table refuses throws TransitionRefused and leaves the record on disk as it was', async () => {
    const { api } = workspace(broker.port);
    const jobId = 'ab000012';
    await registerJob(api, jobId);
    await publish({ ...api, jobId, event: 'completed' });
    const before = recordText(api, jobId);

    await expect(close({ ...api, jobId, request: 'error' })).rejects.toThrow(TransitionRefused);
    await expect(close({ ...api, jobId, request: 'cancelled' })).rejects.toThrow(/already completed/);
    await expect(close({ ...api, jobId, request: 'finished' as never })).rejects.toThrow(UsageError);
    await expect(publish({ ...api, jobId, event: 'error' })).rejects.toThrow(TransitionRefused);
    expect(recordText(api, jobId)).toBe(before);
    expect(await show({ ...api, jobId })).toMatchObject({ status: 'completed', last_seq: 1 });
  });

  it('pick claims for a session, redispatch makes a new attempt, as mam-pick and mam redispatch do', async () => {
    const { api } = workspace(broker.port);
    const jobId = 'ab000013';
    await register({ ...api, jobId, brief: 'for a reviewer', to: 'capability:review' });
    await expect(pick({ ...api, agentSession: 'alice' })).rejects.toThrow(NothingPickable);
    await expect(pick({ ...api, agentSession: 'alice', capabilities: ['re,view'] })).rejects.toThrow(UsageError);

    const claimed = await pick({ ...api, agentSession: 'alice', capabilities: ['review'] });
    expect(claimed).toMatchObject({ job_id: jobId, status: 'running', agent_session: 'alice', attempt_id: 1 });
    const again = await redispatch({ ...api, jobId });
    expect(again).toMatchObject({ status: 'pending', attempt_id: 2 });
    expect(again.dispatch_token).not.toBe(claimed.dispatch_token);
    expect(await show({ ...api, jobId })).toEqual(again);
  });
});

describe('library API: the wire vectors', () => {
  const vectors = (
    JSON.parse(readFileSync(path.join(REPO_ROOT, 'test/fixtures/hmac.json'), 'utf8')) as {
      vectors: { name: string; auth_token: string; wire: string; canonical: string; hmac_sig: string; valid: boolean }[];
    }
  ).vectors;

  it.each(vectors.map((v) => [v.name, v] as const))('%s: canonical form, HMAC and verification as the vector says', (_name, v) => {
    const parsed = parseWireJson(v.wire) as { data: Record<string, unknown> };
    const { hmac_sig: sent, ...data } = parsed.data;
    const unsigned = { ...parsed, data };
    expect(canonicalJson(unsigned)).toBe(v.canonical);
    expect(computeHmac(unsigned, v.auth_token) === v.hmac_sig).toBe(v.valid);
    expect(verifyPayload(parsed, v.auth_token)).toBe(v.valid);
    if (v.valid) {
      expect(sent).toBe(v.hmac_sig);
      expect(signPayload(unsigned, v.auth_token).data.hmac_sig).toBe(v.hmac_sig);
    }
  });
});
