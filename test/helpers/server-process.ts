import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from './free-port.ts';
import { makeTempDir } from './temp-dir.ts';

/**
 * Real broker processes for tests: finding the binaries, starting them on free loopback ports,
 * waiting until they serve, and making sure none outlives the suite (brokers.ts builds on this).
 */
export type ServerName = 'mosquitto' | 'nats-server';

export interface TestBroker {
  url: string;
  host: string;
  port: number;
  stop(): Promise<void>;
  /** Stop and start again on the same port(s) with the same data folder. */
  restart(): Promise<void>;
}
export interface ServerTestBroker extends TestBroker {
  /** Temp folder with the generated config, the log and any persistence; removed by stop(). */
  dir: string;
  logPath: string;
  /** pid of the server itself (not of its watchdog); undefined while stopped. */
  readonly pid: number | undefined;
}

export const HOST = '127.0.0.1';
const WATCHDOG = fileURLToPath(new URL('../fixtures/brokers/watchdog.sh', import.meta.url));
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

export function requireBinary(name: ServerName): string {
  const bin = brokerAvailability()[name];
  if (!bin) throw new Error(`${name} not installed (use describeWithBroker('${name}', …) to skip)`);
  return bin;
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

/** Tracks a running broker; a broker that is already tracked keeps its place. */
export function trackBroker<T extends TestBroker>(b: T): T {
  running.set(b, running.get(b) ?? ++startSeq);
  return b;
}

export function untrackBroker(b: TestBroker): void {
  running.delete(b);
}

// ---- spawned servers -----------------------------------------------------------------------

interface ServerProcess {
  child: ChildProcess;
  serverPid: number | undefined;
  exited: Promise<number | null>;
}

export interface ServerSpec {
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
  /** Added to the server's environment (e.g. the passwords a config reads as `$VAR`). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts `spec.bin -c <dir>/<name>.conf` in a fresh temp folder. `writeConf` returns the config
 * for the chosen ports and may write other files (password, ACL) into the folder.
 */
export async function startServer<X extends object>(
  spec: ServerSpec,
  writeConf: (dir: string, ports: number[]) => string,
  extra: (ports: number[], dir: string) => X,
): Promise<ServerTestBroker & X> {
  const { name, scheme, portCount } = spec;
  const tmp = makeTempDir(`mam-${name}-`);
  const dir = tmp.path;
  const confPath = join(dir, `${name}.conf`);
  const logPath = join(dir, 'server.log');
  const run = { spec, args: ['-c', confPath], dir, logPath };
  let proc: ServerProcess | undefined;
  let ports: number[] = [];
  for (let attempt = 1; ; attempt++) {
    // A free port can be taken between freePort() and the server's bind: pick again and retry.
    ports = await Promise.all(Array.from({ length: portCount }, () => freePort()));
    try {
      writeFileSync(confPath, writeConf(dir, ports));
      proc = await launch(run, ports[0] ?? 0);
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
    url: `${scheme}://${HOST}:${port}`,
    host: HOST,
    port,
    dir,
    logPath,
    get pid() {
      return proc?.serverPid;
    },
    async stop() {
      untrackBroker(broker);
      if (proc) await terminate(proc);
      proc = undefined;
      tmp.cleanup();
    },
    async restart() {
      if (!running.has(broker)) throw new Error(`${name} on port ${port} was stopped; its folder is gone`);
      if (proc) await terminate(proc);
      proc = await launch(run, port);
    },
  };
  // Object.assign onto the broker (not a spread of it) keeps `pid` a live getter.
  return trackBroker(Object.assign(broker, extra(ports, dir)));
}

interface Run {
  spec: ServerSpec;
  args: string[];
  dir: string;
  logPath: string;
}

async function launch({ spec, args, dir, logPath }: Run, port: number): Promise<ServerProcess> {
  const { bin, readyLog } = spec;
  const readLog = () => (existsSync(logPath) ? readFileSync(logPath, 'utf8') : '');
  // restart() appends to the same log: only what this run writes counts.
  const logStart = readLog().length;
  const child = spawn('sh', [WATCHDOG, bin, ...args], { cwd: dir, env: { ...process.env, ...spec.env }, stdio: ['pipe', 'pipe', 'pipe'] });
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
