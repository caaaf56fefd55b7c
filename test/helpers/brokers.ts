import { closeSync, openSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'vitest';
import { startEmbeddedBroker, type EmbeddedBroker, type EmbeddedBrokerOptions } from '../../src/core/broker/embedded-broker.ts';
import {
  HOST,
  requireBinary,
  startServer,
  suiteMode,
  trackBroker,
  untrackBroker,
  useBrokerCleanup,
  type ServerName,
  type ServerTestBroker,
  type TestBroker,
} from './server-process.ts';

/**
 * Brokers for tests: aedes in process, mosquitto and nats-server as real processes (see
 * server-process.ts), and the describe that runs, skips or fails a suite by what is installed.
 * The production configurations of docker/ are started by docker-brokers.ts.
 */
export {
  brokerAvailability,
  stopAllBrokers,
  suiteMode,
  useBrokerCleanup,
  type ServerName,
  type ServerTestBroker,
  type TestBroker,
} from './server-process.ts';

export interface AedesTestBroker extends TestBroker {
  wsUrl?: string;
}
export interface MosquittoTestBroker extends ServerTestBroker {
  /** CA that signed the server certificate, when started with `tls`. */
  caFile?: string;
}
export interface NatsTestBroker extends ServerTestBroker {
  clientPort: number;
}

const FIXTURES = fileURLToPath(new URL('../fixtures/brokers/', import.meta.url));
/** Test-only TLS material (see test/fixtures/brokers/gen-certs.sh). */
export const TEST_TLS = {
  ca: join(FIXTURES, 'ca.crt'),
  serverCert: join(FIXTURES, 'server.crt'),
  serverKey: join(FIXTURES, 'server.key'),
  clientCert: join(FIXTURES, 'client.crt'),
  clientKey: join(FIXTURES, 'client.key'),
} as const;

const announced = new Set<ServerName>();

/** A `describe` for suites that need `name`: runs, skips loudly, or fails in CI (see suiteMode). */
export function requireServer(name: ServerName): (title: string, fn: () => void) => void {
  const mode = suiteMode(name);
  if (mode === 'run') {
    return (title, fn) =>
      describe(title, () => {
        useBrokerCleanup();
        fn();
      });
  }
  if (mode === 'fail') {
    return (title) =>
      describe(title, () => {
        it(`requires ${name}`, () => {
          throw new Error(`${name} not installed, and CI=true forbids skipping its suites`);
        });
      });
  }
  if (!announced.has(name)) {
    announced.add(name);
    if (firstToAnnounce(name)) process.stderr.write(`SKIPPED: ${name} suites — ${name} not installed\n`);
  }
  return (title, fn) => describe.skip(title, fn);
}

/**
 * Each test file runs in its own worker process; one marker per run (the workers' parent is the
 * vitest process) and server makes the SKIPPED line appear once, not once per file.
 */
function firstToAnnounce(name: ServerName): boolean {
  try {
    closeSync(openSync(join(tmpdir(), `mam-test-skipped-${process.ppid}-${name}`), 'wx'));
    return true;
  } catch {
    return false;
  }
}

export function describeWithBroker(name: ServerName, title: string, fn: () => void): void {
  requireServer(name)(title, fn);
}

// ---- aedes (in process) --------------------------------------------------------------------

export type AedesTestOptions = Partial<Omit<EmbeddedBrokerOptions, 'host'>>;

export async function startAedesBroker(opts: AedesTestOptions = {}): Promise<AedesTestBroker> {
  let current: EmbeddedBroker | undefined = await startEmbeddedBroker({ port: 0, ...opts, host: HOST });
  const { port, wsPort } = current;
  const broker: AedesTestBroker = {
    url: `mqtt://${HOST}:${port}`,
    host: HOST,
    port,
    ...(wsPort === undefined ? {} : { wsUrl: `ws://${HOST}:${wsPort}` }),
    async stop() {
      untrackBroker(broker);
      await current?.close();
      current = undefined;
    },
    async restart() {
      await current?.close();
      current = await startEmbeddedBroker({ ...opts, host: HOST, port, ...(wsPort === undefined ? {} : { wsPort }) });
      trackBroker(broker);
    },
  };
  return trackBroker(broker);
}

// ---- spawned servers -----------------------------------------------------------------------

export interface MosquittoOptions {
  /** Extra mosquitto.conf lines, appended after the listener (password_file, acl_file, …). */
  conf?: string[];
  /** TLS 1.3 listener with the fixture certificates; `requireClientCert` asks for client certs. */
  tls?: boolean | { requireClientCert?: boolean };
  allowAnonymous?: boolean;
  /** Keep retained messages and sessions across restart() (mosquitto writes them at shutdown). */
  persistence?: boolean;
}

export async function startMosquitto(opts: MosquittoOptions = {}): Promise<MosquittoTestBroker> {
  const bin = requireBinary('mosquitto');
  const tls = opts.tls === undefined || opts.tls === false ? undefined : opts.tls === true ? {} : opts.tls;
  return startServer(
    { name: 'mosquitto', bin, scheme: tls ? 'mqtts' : 'mqtt', portCount: 1, readyLog: /mosquitto version \S+ running/ },
    (dir, [port]) => {
      const lines = [
        '# generated by test/helpers/brokers.ts',
        // As root, mosquitto would switch to user "mosquitto", which cannot write our 0700 folder.
        ...(process.getuid?.() === 0 ? [`user ${userInfo().username}`] : []),
        `persistence ${opts.persistence ? 'true' : 'false'}`,
        ...(opts.persistence ? [`persistence_location ${dir}/`] : []),
        `log_dest file ${join(dir, 'server.log')}`,
        'log_type all',
        'log_timestamp_format %Y-%m-%dT%H:%M:%S',
        `listener ${port} ${HOST}`,
        `allow_anonymous ${opts.allowAnonymous === false ? 'false' : 'true'}`,
        ...(tls
          ? [
              `cafile ${TEST_TLS.ca}`,
              `certfile ${TEST_TLS.serverCert}`,
              `keyfile ${TEST_TLS.serverKey}`,
              'tls_version tlsv1.3',
              `require_certificate ${tls.requireClientCert ? 'true' : 'false'}`,
            ]
          : []),
        ...(opts.conf ?? []),
      ];
      return lines.join('\n') + '\n';
    },
    () => (tls ? { caFile: TEST_TLS.ca } : {}),
  );
}

export interface NatsOptions {
  /** Extra top-level nats-server.conf lines (accounts, authorization, …). */
  conf?: string[];
  /** Extra lines inside the `mqtt { }` block (ack_wait, max_ack_pending, tls, …). */
  mqttConf?: string[];
}

export async function startNatsServer(opts: NatsOptions = {}): Promise<NatsTestBroker> {
  const bin = requireBinary('nats-server');
  const name = `mam_test_${randomBytes(4).toString('hex')}`;
  return startServer(
    { name: 'nats-server', bin, scheme: 'mqtt', portCount: 2, readyLog: /Server is ready/ },
    (dir, [mqttPort, clientPort]) => {
      const lines = [
        '# generated by test/helpers/brokers.ts',
        // MQTT needs JetStream, and JetStream needs a server name.
        `server_name: "${name}"`,
        `listen: "${HOST}:${clientPort}"`,
        `log_file: "${join(dir, 'server.log')}"`,
        `jetstream { store_dir: "${join(dir, 'jetstream')}" }`,
        `mqtt {\n  listen: "${HOST}:${mqttPort}"\n${(opts.mqttConf ?? []).map((l) => `  ${l}\n`).join('')}}`,
        ...(opts.conf ?? []),
      ];
      return lines.join('\n') + '\n';
    },
    (ports) => ({ clientPort: ports[1] ?? 0 }),
  );
}
