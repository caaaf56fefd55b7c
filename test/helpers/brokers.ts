import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startEmbeddedBroker, type EmbeddedBroker, type EmbeddedBrokerOptions } from '../../src/core/broker/embedded-broker.ts';
import { freePort } from './free-port.ts';
import { makeTempDir } from './temp-dir.ts';

export type ServerName = 'mosquitto' | 'nats-server';

export interface TestBroker {
  url: string;
  host: string;
  port: number;
  stop(): Promise<void>;
  /** Stop and start again on the same port(s) with the same data folder. */
  restart(): Promise<void>;
}
export interface AedesTestBroker extends TestBroker {
  wsUrl?: string;
}
export interface ServerTestBroker extends TestBroker {
  /** Temp folder with the generated config, the log and any persistence; removed by stop(). */
  dir: string;
  logPath: string;
  /** pid of the server itself (not of its watchdog); undefined while stopped. */
  readonly pid: number | undefined;
}
export interface MosquittoTestBroker extends ServerTestBroker {
  /** CA that signed the server certificate, when started with `tls`. */
  caFile?: string;
}
export interface NatsTestBroker extends ServerTestBroker {
  clientPort: number;
}

const HOST = '127.0.0.1';
const FIXTURES = fileURLToPath(new URL('../fixtures/brokers/', import.meta.url));
const WATCHDOG = join(FIXTURES, 'watchdog.sh');
/** Test-only TLS material (see test/fixtures/brokers/gen-certs.sh). */
export const TEST_TLS = {
  ca: join(FIXTURES, 'ca.crt'),
  serverCert: join(FIXTURES, 'server.crt'),
  serverKey: join(FIXTURES, 'server.key'),
  clientCert: join(FIXTURES, 'client.crt'),
  clientKey: join(FIXTURES, 'client.key'),
} as const;
const READY_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 5_000;
const BIND_ATTEMPTS = 3;

// ---- availability --------------------------------------------------------------------------

const SBIN_DIRS = ['/usr/sbin', '/usr/local/sbin', '/sbin'];

/**
 * Where each server binary is, or undefined. Looks in PATH and the sbin folders (Debian puts both
 * servers in /usr/sbin, often not in a user's PATH). `MAM_TEST_HIDE_SERVERS=mosquitto,nats-server`
 * pretends they are missing, to check the skip/fail paths on a machine that has them.
 */
export function brokerAvailability(env: NodeJS.ProcessEnv = process.env): Record<ServerName, string | undefined> {
  const hidden = new Set((env.MAM_TEST_HIDE_SERVERS ?? '').split(',').map((s) => s.trim()));
  const dirs = [...(env.PATH ?? '').split(delimiter).filter(Boolean), ...SBIN_DIRS];
  const find = (name: ServerName) => (hidden.has(name) ? undefined : dirs.map((d) => join(d, name)).find(isExecutable));
  return { mosquitto: find('mosquitto'), 'nats-server': find('nats-server') };
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Missing binary: skip, except in CI where a suite that silently did not run is a failure. */
export function suiteMode(name: ServerName, env: NodeJS.ProcessEnv = process.env): 'run' | 'skip' | 'fail' {
  if (brokerAvailability(env)[name]) return 'run';
  return env.CI === 'true' ? 'fail' : 'skip';
}

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
    process.stderr.write(`SKIPPED: ${name} suites — ${name} not installed\n`);
  }
  return (title, fn) => describe.skip(title, fn);
}

export function describeWithBroker(name: ServerName, title: string, fn: () => void): void {
  requireServer(name)(title, fn);
}

// ---- tracking: nothing outlives the suite --------------------------------------------------

const running = new Map<TestBroker, number>();
let startSeq = 0;
const liveProcs = new Set<ServerProcess>();

// Last resort for a worker that exits without running afterAll: signals are synchronous, and the
// watchdog (fixtures/brokers/watchdog.sh) covers the case where even this handler never runs.
process.once('exit', () => {
  for (const p of liveProcs) killHard(p);
});

function killHard(p: ServerProcess): void {
  for (const pid of [p.serverPid, p.child.pid]) {
    try {
      if (pid) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Stops every broker started (in this process) after `sinceSeq`; the default is all. */
export async function stopAllBrokers(sinceSeq = 0): Promise<void> {
  const doomed = [...running].filter(([, seq]) => seq > sinceSeq).map(([b]) => b);
  await Promise.all(doomed.map((b) => b.stop()));
}

/** In a describe: brokers started inside it are stopped in its afterAll. */
export function useBrokerCleanup(): void {
  let mark = 0;
  beforeAll(() => {
    mark = startSeq;
  });
  afterAll(() => stopAllBrokers(mark));
}

function register<T extends TestBroker>(b: T): T {
  running.set(b, ++startSeq);
  return b;
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
      running.delete(broker);
      await current?.close();
      current = undefined;
    },
    async restart() {
      await current?.close();
      current = await startEmbeddedBroker({ ...opts, host: HOST, port, ...(wsPort === undefined ? {} : { wsPort }) });
      running.set(broker, running.get(broker) ?? ++startSeq);
    },
  };
  return register(broker);
}

// ---- spawned servers -----------------------------------------------------------------------

interface ServerProcess {
  child: ChildProcess;
  serverPid: number | undefined;
  exited: Promise<number | null>;
}

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
  return startServer({ name: 'mosquitto', bin, scheme: tls ? 'mqtts' : 'mqtt', portCount: 1, readyLog: /mosquitto version \S+ running/ }, (dir, [port]) => {
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
        ? [`cafile ${TEST_TLS.ca}`, `certfile ${TEST_TLS.serverCert}`, `keyfile ${TEST_TLS.serverKey}`, 'tls_version tlsv1.3',
           `require_certificate ${tls.requireClientCert ? 'true' : 'false'}`]
        : []),
      ...(opts.conf ?? []),
    ];
    return lines.join('\n') + '\n';
  }, () => (tls ? { caFile: TEST_TLS.ca } : {}));
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
  return startServer({ name: 'nats-server', bin, scheme: 'mqtt', portCount: 2, readyLog: /Server is ready/ }, (dir, [mqttPort, clientPort]) => {
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
  }, (ports) => ({ clientPort: ports[1] ?? 0 }));
}

function requireBinary(name: ServerName): string {
  const bin = brokerAvailability()[name];
  if (!bin) throw new Error(`${name} not installed (use describeWithBroker('${name}', …) to skip)`);
  return bin;
}

interface ServerSpec {
  name: ServerName;
  bin: string;
  scheme: string;
  /** The first port is the MQTT listener the harness waits for. */
  portCount: number;
  /**
   * What the server logs once every listener is bound. A TCP probe alone is not enough: when a
   * squatter holds the port, the probe reaches the squatter while the server exits.
   */
  readyLog: RegExp;
}

async function startServer<X extends object>(
  spec: ServerSpec,
  writeConf: (dir: string, ports: number[]) => string,
  extra: (ports: number[]) => X,
): Promise<ServerTestBroker & X> {
  const { name, bin, scheme, portCount, readyLog } = spec;
  const tmp = makeTempDir(`mam-${name}-`);
  const dir = tmp.path;
  const confPath = join(dir, `${name}.conf`);
  const logPath = join(dir, 'server.log');
  const args = ['-c', confPath];
  let proc: ServerProcess | undefined;
  let ports: number[] = [];
  for (let attempt = 1; ; attempt++) {
    // A free port can be taken between freePort() and the server's bind: pick again and retry.
    ports = await Promise.all(Array.from({ length: portCount }, () => freePort()));
    writeFileSync(confPath, writeConf(dir, ports));
    try {
      proc = await launch(bin, args, dir, ports[0] ?? 0, logPath, readyLog);
      break;
    } catch (err) {
      if (attempt >= BIND_ATTEMPTS || !/address already in use/i.test(String(err))) {
        tmp.cleanup();
        throw err;
      }
    }
  }
  const port = ports[0] ?? 0;
  const broker: ServerTestBroker = {
    url: `${scheme}://${HOST}:${port}`, host: HOST, port, dir, logPath,
    get pid() {
      return proc?.serverPid;
    },
    async stop() {
      running.delete(broker);
      if (proc) await terminate(proc);
      proc = undefined;
      tmp.cleanup();
    },
    async restart() {
      if (!running.has(broker)) throw new Error(`${name} on port ${port} was stopped; its folder is gone`);
      if (proc) await terminate(proc);
      proc = await launch(bin, args, dir, port, logPath, readyLog);
    },
  };
  // Object.assign onto the broker (not a spread of it) keeps `pid` a live getter.
  return register(Object.assign(broker, extra(ports)));
}

async function launch(bin: string, args: string[], dir: string, port: number, logPath: string, readyLog: RegExp): Promise<ServerProcess> {
  const readLog = () => (existsSync(logPath) ? readFileSync(logPath, 'utf8') : '');
  // restart() appends to the same log: only what this run writes counts.
  const logStart = readLog().length;
  const child = spawn('sh', [WATCHDOG, bin, ...args], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-16_384));
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const proc: ServerProcess = { child, serverPid: undefined, exited };
  liveProcs.add(proc);
  child.stdout?.once('data', (d: Buffer) => (proc.serverPid = Number.parseInt(d.toString(), 10)));
  let dead = false;
  void exited.then(() => (dead = true));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(readyLog.test(readLog().slice(logStart)) && !dead && (await canConnect(port)))) {
    if (dead || Date.now() > deadline) {
      await terminate(proc);
      const log = readLog().slice(logStart).slice(-2_000);
      throw new Error(`${bin} did not open ${HOST}:${port} (${dead ? 'exited' : 'timed out'}):\n${out}${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return proc;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, HOST);
    s.setTimeout(500);
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
    s.once('timeout', () => (s.destroy(), resolve(false)));
  });
}

async function terminate(p: ServerProcess): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) {
    p.child.kill('SIGTERM'); // the watchdog forwards it and waits for the server to exit
    const timer = new Promise<'late'>((r) => setTimeout(() => r('late'), STOP_GRACE_MS).unref());
    if ((await Promise.race([p.exited, timer])) === 'late') {
      killHard(p);
      await p.exited;
    }
  }
  // Closing the pipe also ends the watchdog's reader, should the wrapper itself have been killed.
  p.child.stdin?.destroy();
  liveProcs.delete(p);
}
