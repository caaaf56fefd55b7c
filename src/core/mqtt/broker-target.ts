import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { BrokerConfig } from '../config/config.ts';
import { ConfigError } from '../errors.ts';
import type { JobRecord } from '../registry/job-record.ts';

/** Everything needed to open one connection to the broker, whichever client opens it. */
export interface BrokerTarget {
  host: string;
  port: number;
  tls?: { ca?: Buffer | undefined; cert?: Buffer | undefined; key?: Buffer | undefined } | undefined;
  username?: string | undefined;
  password?: string | undefined;
  keepalive: number;
  clientIdPrefix: string;
}

/** Hosts anyone on the internet can read and write: tokens stay safe, but job ids, briefs' details and timing do not. */
const PUBLIC_SANDBOXES = [
  'broker.hivemq.com',
  'test.mosquitto.org',
  'broker.emqx.io',
  'mqtt.eclipseprojects.io',
  'broker.mqttdashboard.com',
  'public.mqtthq.com',
  'mqtt.flespi.io',
  'test.mosca.io',
];

export function isPublicSandbox(host: string): boolean {
  return PUBLIC_SANDBOXES.includes(host.toLowerCase());
}

/** This machine's own addresses: the only ones `mam delegate` and `mam broker` start a broker on unasked. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function readPem(file: string | undefined, variable: string): Buffer | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (err) {
    throw new ConfigError(`${variable}=${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/**
 * The configuration's broker, with the job's own `broker` block on top (contract §7). The password
 * only ever comes from the configuration: a record never holds one. A password without a user name
 * goes with an empty user name, as the Python toolkit's paho sends it (MQTT 3.1.1 allows no password
 * without the user-name flag; NATS then takes the password as a token).
 */
export function resolveBrokerTarget(config: BrokerConfig, record?: Pick<JobRecord, 'broker'>): BrokerTarget {
  const o = record?.broker ?? {};
  const tls = o.tls ?? config.tls;
  const caFile = o.ca_certs ?? config.caCerts;
  const certFile = o.certfile ?? config.certFile;
  const keyFile = o.keyfile ?? config.keyFile;
  return {
    host: o.host ?? config.host,
    port: o.port ?? config.port,
    tls:
      tls || certFile ? { ca: readPem(caFile, 'MQTT_CA_CERTS'), cert: readPem(certFile, 'MQTT_CERTFILE'), key: readPem(keyFile, 'MQTT_KEYFILE') } : undefined,
    username: o.username ?? config.username ?? (config.password === undefined ? undefined : ''),
    password: config.password,
    keepalive: config.keepalive,
    clientIdPrefix: config.clientIdPrefix,
  };
}

/** Unique per process: NATS closes the older of two connections with one client id. */
export function newClientId(target: BrokerTarget, role: string): string {
  return `${target.clientIdPrefix}-${role}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

export function describeTarget(target: BrokerTarget): string {
  return `${target.tls ? 'mqtts' : 'mqtt'}://${target.host}:${target.port}`;
}

/** Options for MQTT.js (the subscriber and the heartbeat timer, which need its reconnects). */
export function toMqttJsOptions(target: BrokerTarget, clientId: string) {
  return {
    host: target.host,
    port: target.port,
    protocol: target.tls ? ('mqtts' as const) : ('mqtt' as const),
    protocolVersion: 4 as const, // NATS speaks only MQTT 3.1.1
    clientId,
    keepalive: target.keepalive,
    username: target.username,
    password: target.password,
    ca: target.tls?.ca,
    cert: target.tls?.cert,
    key: target.tls?.key,
    rejectUnauthorized: true,
    connectTimeout: 10_000,
    // MQTT.js builds a 65,536-entry number cache on its first packet otherwise (~60 ms).
    writeCache: false,
  };
}
