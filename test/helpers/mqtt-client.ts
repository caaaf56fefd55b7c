import { randomBytes } from 'node:crypto';
import { connect, type IClientOptions, type MqttClient } from 'mqtt';

export interface CollectedMessage {
  topic: string;
  payload: string;
  retain: boolean;
  qos: number;
}

const CONNECT_TIMEOUT_MS = 5_000;

// Everything each helper-made client received, from its first byte on: a resumed session
// (clean=false) gets its queued messages right after CONNACK, before a caller could subscribe.
const inboxes = new WeakMap<MqttClient, CollectedMessage[]>();

/** All messages `client` (made by connectPlainClient) received since it was created, in order. */
export function receivedMessages(client: MqttClient): CollectedMessage[] {
  return inboxes.get(client) ?? [];
}

/**
 * A connected MQTT.js client speaking 3.1.1 (what NATS speaks, and the contract's default).
 * Rejects on the first failure instead of retrying forever; later losses are reconnected
 * every 200 ms unless `reconnectPeriod` says otherwise. End it with `client.endAsync(true)`.
 */
export function connectPlainClient(url: string, opts: IClientOptions = {}): Promise<MqttClient> {
  const client = connect(url, {
    protocolVersion: 4,
    clientId: `mam-test-${randomBytes(4).toString('hex')}`,
    connectTimeout: CONNECT_TIMEOUT_MS,
    reconnectPeriod: 200,
    ...opts,
  });
  const inbox: CollectedMessage[] = [];
  inboxes.set(client, inbox);
  client.on('message', (topic, payload, packet) => inbox.push({ topic, payload: payload.toString('utf8'), retain: packet.retain, qos: packet.qos }));
  return new Promise((resolve, reject) => {
    const fail = (err: Error) => {
      cleanup();
      client.end(true);
      reject(err);
    };
    const onConnect = () => {
      cleanup();
      resolve(client);
    };
    const onClose = () => fail(new Error(`MQTT connection to ${url} closed before CONNACK`));
    const timer = setTimeout(() => fail(new Error(`no CONNACK from ${url} within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
    const cleanup = () => {
      clearTimeout(timer);
      client.off('connect', onConnect);
      client.off('error', fail);
      client.off('close', onClose);
    };
    client.on('connect', onConnect);
    client.on('error', fail);
    client.on('close', onClose);
  });
}

export interface CollectOptions {
  /** Resolve as soon as this many messages arrived; without it, collect for the whole timeout. */
  count?: number;
  timeoutMs: number;
  qos?: 0 | 1 | 2;
  /** Runs once the SUBACK is in (e.g. publish now, without racing the subscription). */
  afterSubscribe?: () => unknown;
}

/**
 * Subscribes `topicFilter` and gathers matching messages. The listener is attached before the
 * SUBSCRIBE goes out, so retained messages a broker sends ahead of its SUBACK are counted too.
 * With `count`, fewer messages than that by the timeout is an error naming what did arrive.
 */
export async function collectMessages(client: MqttClient, topicFilter: string, opts: CollectOptions): Promise<CollectedMessage[]> {
  const got: CollectedMessage[] = [];
  let onMessage: ((topic: string, payload: Buffer, packet: { retain: boolean; qos: number }) => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<CollectedMessage[]>((resolve, reject) => {
    timer = setTimeout(() => {
      if (opts.count === undefined) resolve(got);
      else reject(new Error(`got ${got.length}/${opts.count} messages on ${topicFilter} in ${opts.timeoutMs} ms: ${JSON.stringify(got)}`));
    }, opts.timeoutMs);
    onMessage = (topic, payload, packet) => {
      if (!topicMatches(topicFilter, topic)) return;
      got.push({ topic, payload: payload.toString('utf8'), retain: packet.retain, qos: packet.qos });
      if (opts.count !== undefined && got.length >= opts.count) {
        clearTimeout(timer);
        resolve(got);
      }
    };
    client.on('message', onMessage);
  });
  // The timeout may fire while SUBSCRIBE is still in flight; the rejection is awaited below.
  done.catch(() => {});
  try {
    await client.subscribeAsync(topicFilter, { qos: opts.qos ?? 1 });
    await opts.afterSubscribe?.();
    return await done;
  } finally {
    clearTimeout(timer);
    if (onMessage) client.off('message', onMessage);
  }
}

/** MQTT topic filter matching (`+` one level, `#` the rest), so several collectors can share a client. */
export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return true;
    if (i >= t.length) return false;
    if (f[i] !== '+' && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

/** The topic level under which `wireFence` markers travel; tests drop them from what they check. */
export const FENCE_LEVEL = 'test-fence';

/**
 * Returns once everything the broker took before the call has reached `client`: the client's own
 * marker, published on `<topicPrefix>/test-fence` (which `client` must be subscribed to), comes back
 * behind it. A negative check ("nothing more arrived") waits for the fence, never for a while.
 * Returns the messages received before the marker, markers left out.
 */
export async function wireFence(client: MqttClient, topicPrefix: string, timeoutMs = 5_000): Promise<CollectedMessage[]> {
  const marker = randomBytes(8).toString('hex');
  const topic = `${topicPrefix}/${FENCE_LEVEL}`;
  const inbox = receivedMessages(client);
  await client.publishAsync(topic, marker, { qos: 1 });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const at = inbox.findIndex((m) => m.topic === topic && m.payload === marker);
    if (at >= 0) return inbox.slice(0, at).filter((m) => !m.topic.endsWith(`/${FENCE_LEVEL}`));
    if (Date.now() >= deadline) throw new Error(`wireFence: the marker on ${topic} did not come back within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
