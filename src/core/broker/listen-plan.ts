import type { BrokerConfig } from '../config/config.ts';
import { isLoopback } from '../mqtt/broker-target.ts';

export const DEFAULT_BROKER_HOST = '127.0.0.1';
export const DEFAULT_BROKER_PORT = 1883;

export interface ListenPlan {
  host: string;
  port: number;
  auth?: { username: string; password: string };
  warnings: string[];
}

/**
 * Where `mam broker` listens: the flags win; otherwise the configured broker when it names this
 * machine (so the other commands find it with the same configuration), else 127.0.0.1:1883. The
 * configured credentials are required of clients only for a broker on this machine.
 */
export function planListen(asked: { host?: string | undefined; port?: number | undefined }, broker: BrokerConfig): ListenPlan {
  const local = isLoopback(broker.host);
  const warnings: string[] = [];
  const host = asked.host ?? (local ? broker.host : DEFAULT_BROKER_HOST);
  const port = asked.port ?? (local ? broker.port : DEFAULT_BROKER_PORT);
  const auth = local && broker.username && broker.password ? { username: broker.username, password: broker.password } : undefined;
  if (!local) warnings.push(`MQTT_BROKER=${broker.host} is not this machine: the other mam commands will not use this broker`);
  if (local && broker.tls) warnings.push('MQTT_TLS is set, but mam broker serves plain MQTT only: clients configured so will not connect');
  if (!isLoopback(host) && !auth) warnings.push(`listening on ${host} without TLS or passwords: anyone who can reach it can read and publish`);
  return { host, port, ...(auth ? { auth } : {}), warnings };
}
