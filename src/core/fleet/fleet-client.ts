import { type IClientOptions, type MqttClient, connect } from 'mqtt';
import type { MamConfig } from '../config/config.ts';
import { type BrokerError, SubscriptionRefused, classifyConnectionError } from '../mqtt/broker-errors.ts';
import { type BrokerTarget, describeTarget, newClientId, resolveBrokerTarget, toMqttJsOptions } from '../mqtt/broker-target.ts';

export interface FleetConnection {
  client: MqttClient;
  target: BrokerTarget;
  broker: string;
}

/** How long a short fleet command (`mam agents`, `mam claim --broker`) waits for its CONNACK. */
const CONNECT_MS = 10_000;

/**
 * A clean-session MQTT.js connection for the fleet's commands. `reconnect` (for `mam agent up`)
 * keeps MQTT.js's retries; without it the first failure rejects, as a short command should.
 */
export function openFleetConnection(
  config: MamConfig,
  role: string,
  extra: Pick<IClientOptions, 'will'> & { reconnect?: boolean } = {},
): Promise<FleetConnection> {
  const target = resolveBrokerTarget(config.broker);
  const client = connect({
    ...toMqttJsOptions(target, newClientId(target, role)),
    clean: true,
    reconnectPeriod: extra.reconnect ? 1_000 : 0,
    ...(extra.will ? { will: extra.will } : {}),
  });
  return new Promise((resolve, reject) => {
    const fail = (err: Error & { code?: number | string }) => {
      if (extra.reconnect && classifyConnectionError(target, err).transient) return; // MQTT.js tries again
      cleanup();
      client.end(true);
      reject(classifyConnectionError(target, err));
    };
    const onClose = () => {
      if (!extra.reconnect) fail(Object.assign(new Error('connection closed before CONNACK'), { code: 'ECONNCLOSED' }));
    };
    const timer = extra.reconnect ? undefined : setTimeout(() => fail(Object.assign(new Error('no CONNACK'), { code: 'ETIMEDOUT' })), CONNECT_MS);
    const onConnect = () => {
      cleanup();
      resolve({ client, target, broker: describeTarget(target) });
    };
    const cleanup = () => {
      if (timer) clearTimeout(timer);
      client.off('connect', onConnect);
      client.off('error', fail);
      client.off('close', onClose);
    };
    client.on('connect', onConnect);
    client.on('error', fail);
    client.on('close', onClose);
  });
}

/** SUBSCRIBE at QoS 1 and wait for the SUBACK; a refused filter (an ACL) is a BrokerError. */
export async function subscribeAcked(conn: FleetConnection, filters: string[]): Promise<void> {
  const granted = await conn.client.subscribeAsync(filters, { qos: 1 });
  const refused = granted.filter((g) => g.qos === 128).map((g) => g.topic);
  if (refused.length > 0) throw new SubscriptionRefused(conn.broker, refused);
}

export async function publishAcked(conn: FleetConnection, topic: string, payload: string, retain: boolean): Promise<void> {
  await conn.client.publishAsync(topic, payload, { qos: 1, retain });
}

/** A clean DISCONNECT (which also discards a Last Will); a broker that does not answer is not waited on past 2 s. */
export async function closeFleetConnection(conn: FleetConnection | undefined): Promise<void> {
  if (!conn) return;
  const ended = new Promise<void>((resolve) => conn.client.end(false, {}, () => resolve()));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2_000)))]);
  clearTimeout(timer);
  conn.client.end(true);
}

export type { BrokerError };
