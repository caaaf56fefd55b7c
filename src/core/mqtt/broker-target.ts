import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { BrokerConfig } from '../config/config.ts';
import { ConfigError } from '../errors.ts';
import type { JobRecord } from '../registry/job-record.ts';
import { type BrokerServer, formatServer, parseServerList, sameServer, withPorts } from './server-list.ts';

/** Everything needed to open one connection to the broker, whichever client opens it. */
export interface BrokerTarget {
  /** The first of `servers`: where a connection goes first. */
  host: string;
  port: number;
  /** The servers to fail over along, in order (one for a single broker). */
  servers: BrokerServer[];
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
  const servers = jobServers(config, o);
  return {
    host: servers[0]!.host,
    port: servers[0]!.port,
    servers,
    tls:
      tls || certFile ? { ca: readPem(caFile, 'MQTT_CA_CERTS'), cert: readPem(certFile, 'MQTT_CERTFILE'), key: readPem(keyFile, 'MQTT_KEYFILE') } : undefined,
    username: o.username ?? config.username ?? (config.password === undefined ? undefined : ''),
    password: config.password,
    keepalive: config.keepalive,
    clientIdPrefix: config.clientIdPrefix,
  };
}

/**
 * A job's servers (docs/cluster.md). The block's `host` stands for MQTT_BROKER (one server or a
 * list, its `port` for entries without one): when every server it names is configured, the
 * configured list is kept with those first — a record written on one node of a cluster still
 * fails over — otherwise the job lives on the brokers it names, and only there. A block with a
 * `port` alone moves every configured server to that port, as it moved the one broker before lists.
 */
function jobServers(config: BrokerConfig, o: { host?: string | undefined; port?: number | undefined }): BrokerServer[] {
  const configured = config.servers && config.servers.length > 0 ? config.servers : [{ host: config.host, port: config.port }];
  if (o.host === undefined) return o.port === undefined ? configured : configured.map((s) => ({ host: s.host, port: o.port! }));
  const written = parseServerList(o.host);
  if (typeof written === 'string') throw new ConfigError(`the job's broker.host ${JSON.stringify(o.host)}: ${written}`);
  const named = withPorts(written, o.port ?? config.port);
  if (!named.every((s) => configured.some((c) => sameServer(s, c)))) return named;
  return [...named, ...configured.filter((c) => !named.some((s) => sameServer(s, c)))];
}

/** The target narrowed to one of its servers (the `index`-th, wrapping): a one-shot try goes to one. */
export function atServer(target: BrokerTarget, index: number): BrokerTarget {
  const server = target.servers[index % target.servers.length]!;
  return { ...target, host: server.host, port: server.port, servers: [server] };
}

/** Unique per process: NATS closes the older of two connections with one client id. */
export function newClientId(target: BrokerTarget, role: string): string {
  return `${target.clientIdPrefix}-${role}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** `mqtt://host:port`; for a list, `mqtt://h1:p1,h2:p2,…` (messages name every server tried). */
export function describeTarget(target: BrokerTarget): string {
  const scheme = target.tls ? 'mqtts' : 'mqtt';
  if (target.servers.length <= 1) return `${scheme}://${target.host}:${target.port}`;
  return `${scheme}://${target.servers.map(formatServer).join(',')}`;
}

/**
 * Options for MQTT.js (the subscriber, the heartbeat timer and the runner, which need its
 * reconnects). With several servers, MQTT.js's `servers` builds each new connection to the next
 * one, round-robin from the first (connect/index.js); use connectMqtt() (mqtt-client.ts), which
 * also keeps TLS checking each server under its own name.
 */
export function toMqttJsOptions(target: BrokerTarget, clientId: string) {
  return {
    host: target.host,
    port: target.port,
    ...(target.servers.length > 1 ? { servers: target.servers.map((s) => ({ host: s.host, port: s.port })) } : {}),
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
