// Small helpers for the benchmarks: a private mosquitto, workspaces, timing, /proc sampling.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const bin = (name) => path.join(ROOT, 'bin', `${name}.js`);

export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** mosquitto on a free loopback port: the neutral broker every contender talks to. */
export async function startMosquitto() {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mam-bench-mosq-'));
  const conf = path.join(dir, 'mosquitto.conf');
  writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 100000\nuser ${os.userInfo().username}\n`);
  const exe = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].find((p) => existsSync(p)) ?? 'mosquitto';
  const child = spawn(exe, ['-c', conf], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    if (
      await new Promise((r) =>
        net
          .connect(port, '127.0.0.1')
          .on('connect', function () {
            this.destroy();
            r(true);
          })
          .on('error', () => r(false)),
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { port, pid: child.pid, stop: () => child.kill('SIGKILL') };
}

export function workspace(env = {}) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'mam-bench-ws-'));
  mkdirSync(path.join(root, '.git'));
  return { root, env: { PATH: process.env.PATH, HOME: root, MAM_REAL_ROOT: root, ...env } };
}

export function run(cmd, args, ws, extraEnv = {}) {
  const t = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd: ws.root, env: { ...ws.env, ...extraEnv }, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.status !== 0 && r.status !== 4) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return { ms, stdout: r.stdout, status: r.status };
}

/** Peak RSS (KiB) of one run, from GNU time. */
export function peakRssKiB(cmd, args, ws, extraEnv = {}) {
  if (!existsSync('/usr/bin/time')) return undefined;
  const r = spawnSync('/usr/bin/time', ['-f', '%M', cmd, ...args], { cwd: ws.root, env: { ...ws.env, ...extraEnv }, encoding: 'utf8' });
  return Number(r.stderr.trim().split('\n').at(-1));
}

export function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], min: s[0], max: s.at(-1), n: s.length };
}

export function procStatus(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number((text.match(new RegExp(`${k}:\\s+(\\d+)`)) ?? [])[1]);
  return { rssKiB: kb('VmRSS'), hwmKiB: kb('VmHWM') };
}

export function cpuMs(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ticks = Number(f[11]) + Number(f[12]);
  return (ticks * 1000) / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
}

const canonical = (v) =>
  Array.isArray(v)
    ? `[${v.map(canonical).join(',')}]`
    : v && typeof v === 'object'
      ? `{${Object.keys(v)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
          .join(',')}}`
      : JSON.stringify(v);

/** A job record written straight to disk (fast; what mam-register writes), and its signer. */
export function writeRecord(ws, jobId, status, createdAt) {
  const token = randomBytes(32).toString('base64url');
  const rec = {
    job_id: jobId,
    status,
    created_at: createdAt,
    updated_at: createdAt,
    agent_session: null,
    brief: 'bench',
    last_seq: 0,
    auth_token: token,
    dispatch_token: randomBytes(16).toString('hex'),
    attempt_id: 1,
    transition_seq: status === 'pending' ? 0 : 1,
    heartbeat_sec: 30,
    heartbeat_misses: 4,
    ack_timeout_sec: 180,
    idle_timeout_sec: 120,
    timeout_sec: 3600,
    transport: 'herdr',
    depends_on: [],
    detail: null,
  };
  const dir = path.join(ws.root, '.mam/jobs');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(dir, `${jobId}.json`), JSON.stringify(rec), { mode: 0o600 });
  return rec;
}

/** A signed event exactly as the contract writes it (ASCII strings and integers only here). */
export function signedEvent(rec, seq) {
  const p = {
    schema_version: 1,
    seq,
    job_id: rec.job_id,
    event: 'progress',
    timestamp: '2026-12-02T00:00:00Z',
    detail: `step ${seq}`,
    data: { dispatch_token: rec.dispatch_token, attempt_id: 1 },
  };
  p.data.hmac_sig = createHmac('sha256', rec.auth_token)
    .update(canonical({ ...p, data: { dispatch_token: rec.dispatch_token, attempt_id: 1 } }))
    .digest('hex');
  return JSON.stringify(p);
}

/** `writeRecord` with some fields replaced (heartbeat, idle window, agent session…), written again. */
export function writeRecordWith(ws, jobId, status, createdAt, fields) {
  const rec = { ...writeRecord(ws, jobId, status, createdAt), ...fields };
  writeFileSync(path.join(ws.root, '.mam/jobs', `${jobId}.json`), `${JSON.stringify(rec, null, 2)}\n`, { mode: 0o600 });
  return rec;
}

/** Calls `onLine(line, at)` for each line of a readable stream (`at`: when its chunk arrived, ms). */
export function eachLine(stream, onLine) {
  let buf = '';
  stream.setEncoding('utf8').on('data', (d) => {
    const at = performance.timeOrigin + performance.now();
    buf += d;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      onLine(buf.slice(0, nl), at);
      buf = buf.slice(nl + 1);
      nl = buf.indexOf('\n');
    }
  });
}

/** Least-squares slope of `[x, y]` points (y per unit of x); 0 with fewer than two points. */
export function slope(points) {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / sxx;
}

/**
 * test/helpers/cluster-brokers.ts for a plain .mjs: bundled with esbuild (the test harness itself, so
 * a bench starts the very cluster the tests start), with `vitest` stubbed (its cleanup hooks are not
 * used outside a test) and each helper's `import.meta.url` pinned to its own file (the harness finds
 * docker/ and its watchdog through it). Written under node_modules/.cache so that its packages resolve.
 */
export async function loadClusterHarness() {
  const esbuild = await import('esbuild');
  const pin = (file) => readFileSync(file, 'utf8').replaceAll('import.meta.url', JSON.stringify(pathToFileURL(file).href));
  const out = await esbuild.build({
    entryPoints: [path.join(ROOT, 'test/helpers/cluster-brokers.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    write: false,
    logLevel: 'silent',
    plugins: [
      {
        name: 'bench-harness',
        setup(build) {
          build.onResolve({ filter: /^vitest$/ }, () => ({ path: 'vitest', namespace: 'no-vitest' }));
          build.onLoad({ filter: /.*/, namespace: 'no-vitest' }, () => ({
            contents: 'const noop = () => {}; export { noop as afterAll, noop as beforeAll, noop as onTestFinished, noop as describe, noop as it };',
            loader: 'js',
          }));
          build.onLoad({ filter: /[/\\]test[/\\]helpers[/\\][^/\\]+\.ts$/ }, (args) => ({ contents: pin(args.path), loader: 'ts' }));
        },
      },
    ],
  });
  const cache = path.join(ROOT, 'node_modules/.cache/mam-bench');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(path.join(cache, 'harness-'));
  const file = path.join(dir, 'cluster-brokers.mjs');
  writeFileSync(file, out.outputFiles[0].text);
  try {
    return await import(pathToFileURL(file).href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Kills of what `spawnLines` started (and whatever else a bench adds), run on exit: a crash leaves nothing behind. */
export const spawned = new Set();
process.on('exit', () => spawned.forEach((kill) => kill()));

/**
 * A child whose stdout lines go to `onLine`; `err` keeps stderr's tail, `rejectedLogs` counts the
 * subscriber's `message rejected` warnings in it, `exited` resolves with the code (or signal).
 */
export function spawnLines(cmd, args, env, onLine, cwd = ROOT) {
  const p = spawn(cmd, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  const r = { p, err: '', code: undefined, rejectedLogs: 0 };
  const kill = () => p.kill('SIGKILL');
  spawned.add(kill);
  eachLine(p.stdout, onLine);
  p.stderr.setEncoding('utf8').on('data', (d) => {
    r.err = (r.err + d).slice(-20_000);
    r.rejectedLogs += d.split('message rejected').length - 1;
  });
  r.exited = new Promise((resolve) => p.on('exit', (code, sig) => (spawned.delete(kill), resolve((r.code = code ?? sig)))));
  return r;
}

/**
 * MQTT.js options as MAM's heartbeat timer builds them (src/core/mqtt/broker-target.ts, clean session),
 * for `{ servers: [{ host, port }…], username?, password? }`: a list moves each reconnect to the next server.
 */
export const mqttJsOptions = (t, role) => ({
  host: t.servers[0].host,
  port: t.servers[0].port,
  ...(t.servers.length > 1 ? { servers: t.servers, connectTimeout: 3_000 } : { connectTimeout: 10_000 }),
  protocolVersion: 4,
  clientId: `mam-${role}-${process.pid}-${randomBytes(4).toString('hex')}`,
  keepalive: 60,
  username: t.username,
  password: t.password,
  writeCache: false,
  reconnectPeriod: 1_000,
  clean: true,
});

/** dist/'s bundles and library entry, by size and mtime; '' while a build has emptied dist/lib. */
function buildStamp(root) {
  const api = path.join(root, 'dist/lib/api/index.js');
  if (!existsSync(api)) return '';
  const files = [...readdirSync(path.join(root, 'dist')).filter((f) => f.endsWith('.cjs')), 'lib/api/index.js'];
  return files.map((f) => `${f}:${statSync(path.join(root, 'dist', f)).mtimeMs}`).join(',');
}

/**
 * A private copy of a build (package.json, bin/, dist/; node_modules linked from this tree), so that a
 * rebuild of the working tree during a long bench does not change what is measured halfway through.
 * A build in progress (dist/lib emptied, files changing while copied) is waited out. `sha` names the
 * monitor's bundle. Removed on exit.
 */
export async function snapshotBuild(from = ROOT) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mam-bench-build-'));
  spawned.add(() => rmSync(dir, { recursive: true, force: true }));
  for (let i = 0; ; i++) {
    const before = buildStamp(from);
    for (const f of ['package.json', 'bin', 'dist']) cpSync(path.join(from, f), path.join(dir, f), { recursive: true, force: true });
    if (before !== '' && before === buildStamp(from)) break;
    if (i === 60) throw new Error(`${from}: dist/ is still being rebuilt after a minute`);
    rmSync(path.join(dir, 'dist'), { recursive: true, force: true });
    await new Promise((r) => setTimeout(r, 1_000));
  }
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  const sha = createHash('sha256')
    .update(readFileSync(path.join(dir, 'dist/mam-subscribe.cjs')))
    .digest('hex')
    .slice(0, 12);
  return { dir, sha, bin: (name) => path.join(dir, 'bin', `${name}.js`) };
}
