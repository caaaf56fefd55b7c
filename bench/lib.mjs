// Small helpers for the benchmarks: a private mosquitto, workspaces, timing, /proc sampling.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
  return { port, stop: () => child.kill('SIGKILL') };
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
