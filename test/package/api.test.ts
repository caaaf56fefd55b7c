import { readFileSync } from 'node:fs';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  type MamConfig,
  NotDelivered,
  Registry,
  TransitionRefused,
  UsageError,
  type WatchedPayload,
  buildEventPayload,
  canonicalJson,
  computeHmac,
  eventsTopic,
  loadConfig,
  parseWireJson,
  publish,
  signPayload,
  verifyPayload,
  watch,
  wireJson,
} from '../../src/api/index.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT, makeWorkspace } from '../helpers/cli.ts';
import { freePort } from '../helpers/free-port.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { waitUntil } from '../helpers/wait.ts';

/**
 * The library API (src/api) as a program that embeds MAM uses it: `publish` and `watch` end to end
 * against the embedded broker, with only what `src/api/index.ts` exports.
 */

interface Api {
  config: MamConfig;
  registry: Registry;
}

/** A workspace of its own, pointed at `port`; removed when the test ends. */
function workspace(port: number): Api {
  const ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(port) });
  onTestFinished(() => ws.cleanup());
  const config = loadConfig(ws.env, ws.root);
  return { config, registry: new Registry(config) };
}

const LIMITS = { heartbeatSec: 30, heartbeatMisses: 4, ackTimeoutSec: 30, timeoutSec: 60, transport: 'herdr', dependsOn: [] } as const;

async function registerJob(api: Api, jobId: string): Promise<void> {
  await api.registry.register({ ...LIMITS, dependsOn: [], jobId, brief: 'api test' });
}

/** Starts a watch of `jobId` and resolves once the broker acknowledged its subscription. */
async function startWatch(api: Api, jobId: string, seen: WatchedPayload[], wireTexts: string[] = []) {
  let subscribed!: () => void;
  const ready = new Promise<void>((resolve) => (subscribed = resolve));
  const outcome = watch({
    ...api,
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
    const api = workspace(broker.port);
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
    const { auth_token } = api.registry.read(jobId);
    for (const text of wireTexts) expect(verifyPayload(parseWireJson(text), auth_token)).toBe(true);
    expect(api.registry.read(jobId)).toMatchObject({ status: 'completed', last_seq: 3 });
  });

  it('a forged message (signed with another key) never reaches onEvent, and is audited', async () => {
    const api = workspace(broker.port);
    const jobId = 'ab000002';
    await registerJob(api, jobId);
    const record = api.registry.read(jobId);
    const seen: WatchedPayload[] = [];
    const outcome = startWatch(api, jobId, seen);

    // Everything right but the key: same job, topic, dispatch token and attempt, a seq not yet used.
    const forged = signPayload(
      buildEventPayload({ jobId, seq: 1, event: 'completed', detail: 'forged', dispatchToken: record.dispatch_token, attemptId: record.attempt_id }),
      'not-the-job-token-but-long-enough',
    );
    const client = await connectPlainClient(broker.url);
    onTestFinished(() => client.endAsync());
    await client.publishAsync(eventsTopic(api.config.topicRoot, jobId), wireJson(forged), { qos: 1 });
    const events = path.join(api.config.logDir, jobId, 'events.ndjson');
    expect(await waitUntil(() => readFileSync(events, 'utf8').includes('"reason":"hmac"'), 5_000)).toBe(true);
    expect(seen).toEqual([]);

    const genuine = await publish({ ...api, jobId, event: 'completed', detail: 'genuine' });
    expect(await outcome).toMatchObject({ reason: 'all_completed' });
    expect(seen).toEqual([genuine]);
    expect(genuine.detail).toBe('genuine');
  });

  it('watch: an aborted signal ends it with stopped; an exception in onEvent rejects it', async () => {
    const api = workspace(broker.port);
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
    const api = workspace(broker.port);
    const jobId = 'ab000004';
    await registerJob(api, jobId);

    await expect(publish({ ...api, jobId, event: 'progress', data: { hmac_sig: 'x' } })).rejects.toThrow(UsageError);
    await expect(publish({ ...api, jobId, event: 'progress', data: { x: Number.NaN } })).rejects.toThrow(UsageError);
    await expect(publish({ ...api, jobId, event: 'progress', data: { big: 'x'.repeat(70_000) } })).rejects.toThrow(/64|65536/);
    await expect(publish({ ...api, jobId, event: 'finished' as never })).rejects.toThrow(UsageError);
    await expect(publish({ ...api, jobId: 'NOT-AN-ID', event: 'progress' })).rejects.toThrow(UsageError);
    await expect(watch({ ...api, jobIds: [], onEvent: () => undefined })).rejects.toThrow(UsageError);
    expect(api.registry.read(jobId).last_seq).toBe(0);

    await publish({ ...api, jobId, event: 'completed' });
    await expect(publish({ ...api, jobId, event: 'progress' })).rejects.toThrow(TransitionRefused);
  });

  it('publish to an unreachable broker: NotDelivered, recorded on disk, the token not shown by inspect', async () => {
    const api = workspace(await freePort());
    const jobId = 'ab000005';
    await registerJob(api, jobId);
    const err = await publish({ ...api, jobId, event: 'started', attempts: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotDelivered);
    const notDelivered = err as NotDelivered;
    expect(notDelivered.result.seq).toBe(1);
    const { auth_token } = api.registry.read(jobId);
    expect(inspect(err)).not.toContain(auth_token);
    expect(JSON.stringify(err)).not.toContain(auth_token);
    expect(api.registry.read(jobId)).toMatchObject({ status: 'running', last_seq: 1 });
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
