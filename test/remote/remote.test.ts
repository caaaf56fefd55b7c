import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildDispatch, verifyDispatch } from '../../src/core/remote/dispatch-payload.ts';
import { openToken, sealToken } from '../../src/core/remote/token-envelope.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { type RunResult, type Workspace, binPath, makeWorkspace, runBin, runBinAsync } from '../helpers/cli.ts';
import { collectMessages, connectPlainClient } from '../helpers/mqtt-client.ts';

const SECRET = 'remote-test-secret-0123456789';
const record = (ws: Workspace, id: string) => JSON.parse(readFileSync(path.join(ws.root, '.mam/jobs', `${id}.json`), 'utf8'));

describe('the sealed token and the signed dispatch', () => {
  it('seals and opens the token; another secret or another job does not open it', () => {
    const sealed = sealToken('the-token', SECRET, 'aaaa0001');
    expect(openToken(sealed, SECRET, 'aaaa0001')).toBe('the-token');
    expect(() => openToken(sealed, 'other', 'aaaa0001')).toThrow(/does not open/);
    expect(() => openToken(sealed, SECRET, 'aaaa0002')).toThrow(/does not open/);
    expect(() => openToken({ ...sealed, tag: sealed.tag.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) }, SECRET, 'aaaa0001')).toThrow(/does not open/);
  });

  it('verifies with the secret only, never carries the token in clear, and is bound to its topic', () => {
    const rec = {
      job_id: 'aaaa0001',
      brief: 'b',
      dispatch_token: 'f'.repeat(32),
      attempt_id: 1,
      last_seq: 0,
      auth_token: 'T0KEN-in-clear-xyz',
      heartbeat_sec: 30,
      heartbeat_misses: 4,
      ack_timeout_sec: 180,
      idle_timeout_sec: 120,
      timeout_sec: 3600,
    };
    const text = wireJson(buildDispatch(rec as never, 's1', SECRET));
    expect(text).not.toContain('T0KEN-in-clear-xyz');
    const bytes = Buffer.from(text);
    const ok = verifyDispatch(bytes, 'aaaa0001', SECRET);
    expect(ok.ok && ok.authToken).toBe('T0KEN-in-clear-xyz');
    expect(verifyDispatch(bytes, 'aaaa0001', 'another-secret')).toEqual({ ok: false, reason: 'hmac' });
    expect(verifyDispatch(bytes, 'aaaa0002', SECRET)).toEqual({ ok: false, reason: 'topic' });
    expect(verifyDispatch(Buffer.from('{nope'), 'aaaa0001', SECRET)).toEqual({ ok: false, reason: 'json' });
  });
});

describe('two hosts through one broker', () => {
  let broker: TestBroker;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  const children: ReturnType<typeof spawn>[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  const hosts = () => {
    const env = { MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port), MAM_DISPATCH_SECRET: SECRET };
    return { a: makeWorkspace(env), b: makeWorkspace(env) };
  };
  // The broker runs in this process: anything that talks to it must be spawned without blocking
  // (runBinAsync); runBin is kept for commands that never connect.

  /** The runner of host B, in the background, as an operator would leave it. */
  // Each test has its own session name: a dispatch left retained by one test is not another's.
  let session = '';
  const runner = (b: Workspace, exec: string, extraEnv: NodeJS.ProcessEnv = {}) => {
    const child = spawn(process.execPath, [binPath('mam-remote'), 'run', '--session', session, '--once', '--exec', exec], {
      cwd: b.root,
      env: { ...b.env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const ready = new Promise<void>((resolve) => child.stderr.on('data', () => stderr.includes('SUBSCRIBED') && resolve()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { ready, exited, stderr: () => stderr };
  };
  const register = (a: Workspace) => {
    const id = JSON.parse(runBin('mam-register', ['--brief', 'remote brief', '--heartbeat', '1', '--timeout', '60'], a).stdout).job_id as string;
    session = `host-${id}`;
    return id;
  };

  it('dispatch → run → the delegator sees completed, its record too; the agent had its environment; the dispatch is retired', async () => {
    const { a, b } = hosts();
    const id = register(a);
    const dump = path.join(b.root, 'env.txt');
    const r = runner(
      b,
      `env | grep -E '^(JOB_ID|MAM_JOB_BRIEF|MAM_PUBLISH_CMD|MAM_DISPATCH_TOKEN|MAM_ATTEMPT_ID)=' > ${dump}; $MAM_PUBLISH_CMD --event progress --detail halfway >/dev/null`,
    );
    await r.ready;
    const watch = runBinAsync('mam-subscribe', ['--job', id, '--remote', '--timeout', '30'], a);
    expect((await runBinAsync('mam-remote', ['dispatch', '--job', id, '--session', session], a)).code).toBe(0);
    const w: RunResult = await watch;
    expect(w.code).toBe(0);
    expect(
      w.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).event),
    ).toEqual(expect.arrayContaining(['started', 'progress', 'completed']));
    expect(await r.exited).toBe(0);
    expect(record(a, id)).toMatchObject({ status: 'completed', transport: 'remote' });
    expect(record(b, id)).toMatchObject({ status: 'completed' });
    const env = Object.fromEntries(
      readFileSync(dump, 'utf8')
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(env).toMatchObject({ JOB_ID: id, MAM_JOB_BRIEF: 'remote brief', MAM_DISPATCH_TOKEN: record(a, id).dispatch_token, MAM_ATTEMPT_ID: '1' });
    expect(env.MAM_PUBLISH_CMD).toMatch(new RegExp(`/bin/mam-publish\\.js --job ${id}$`));
    const late = await connectPlainClient(broker.url);
    expect(await collectMessages(late, `python/mqtt/jobs/${id}/dispatch`, { timeoutMs: 800 })).toEqual([]);
    late.end(true);
  });

  it('a failing agent gives error with its exit code; subscriber 1, runner 1', async () => {
    const { a, b } = hosts();
    const id = register(a);
    const r = runner(b, 'exit 3');
    await r.ready;
    const watch = runBinAsync('mam-subscribe', ['--job', id, '--remote', '--timeout', '30'], a);
    expect((await runBinAsync('mam-remote', ['dispatch', '--job', id, '--session', session], a)).code).toBe(0);
    const w = await watch;
    expect(w.code).toBe(1);
    expect(w.stdout).toContain('agent exited with code 3');
    expect(await r.exited).toBe(1);
  });

  it('a dispatch signed with another secret is never run, nor is a replay', async () => {
    const { a, b } = hosts();
    const id = register(a);
    const marker = path.join(b.root, 'ran');
    const forged = runner(b, `echo x >> ${marker}`, { MAM_DISPATCH_SECRET: 'not-the-same-secret' });
    await forged.ready;
    expect((await runBinAsync('mam-remote', ['dispatch', '--job', id, '--session', session], a)).code).toBe(0);
    await vi.waitFor(() => expect(forged.stderr()).toMatch(/"reason":"hmac".*"msg":"dispatch rejected"/), { timeout: 10_000 });
    expect(existsSync(marker)).toBe(false);
    children.splice(0).forEach((c) => c.kill('SIGKILL'));
    // Capture the genuine dispatch, let it run once, then put it back retained: it must not run again.
    const spy = await connectPlainClient(broker.url);
    const [dispatch] = await collectMessages(spy, `python/mqtt/jobs/${id}/dispatch`, { count: 1, timeoutMs: 3000 });
    const genuine = runner(b, `echo x >> ${marker}`);
    await genuine.ready;
    expect(await genuine.exited).toBe(0);
    await spy.publishAsync(`python/mqtt/jobs/${id}/dispatch`, dispatch!.payload, { qos: 1, retain: true });
    const again = runner(b, `echo x >> ${marker}`);
    await again.ready;
    await vi.waitFor(() => expect(again.stderr()).toMatch(/"reason":"replay".*"msg":"dispatch rejected"/), { timeout: 10_000 });
    spy.end(true);
    expect(readFileSync(marker, 'utf8')).toBe('x\n');
  });

  it('without MAM_DISPATCH_SECRET both sides refuse with one line, exit 1', async () => {
    const { a, b } = hosts();
    const id = register(a);
    const d = await runBinAsync('mam-remote', ['dispatch', '--job', id, '--session', 'x'], a, { env: { MAM_DISPATCH_SECRET: '' } });
    expect([d.code, d.stderr]).toEqual([1, expect.stringMatching(/^ERROR: MAM_DISPATCH_SECRET is not set[^\n]*\n$/)]);
    const r = await runBinAsync('mam-remote', ['run', '--session', 'x', '--exec', 'true', '--once'], b, { env: { MAM_DISPATCH_SECRET: '' } });
    expect([r.code, r.stderr]).toEqual([1, expect.stringMatching(/^ERROR: MAM_DISPATCH_SECRET is not set[^\n]*\n$/)]);
  });

  it("the delegator's cancel stops a long agent within seconds; nothing more is published; the watch ends 1", async () => {
    const { a, b } = hosts();
    const id = register(a);
    const r = runner(b, 'sleep 60');
    await r.ready;
    const watch = runBinAsync('mam-subscribe', ['--job', id, '--remote', '--timeout', '40'], a);
    expect((await runBinAsync('mam-remote', ['dispatch', '--job', id, '--session', session], a)).code).toBe(0);
    const statusOnB = () => (existsSync(path.join(b.root, '.mam/jobs', `${id}.json`)) ? record(b, id).status : 'absent');
    for (let i = 0; i < 150 && statusOnB() !== 'running'; i++) await new Promise((res) => setTimeout(res, 100));
    expect(statusOnB(), r.stderr()).toBe('running');
    const started = Date.now();
    expect((await runBinAsync('mam-close', ['--job', id, '--request', 'cancelled'], a)).code).toBe(0);
    expect((await watch).code).toBe(1);
    expect(await r.exited).toBe(1);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(record(b, id).status).toBe('cancelled');
    const published = readFileSync(path.join(b.root, '.mam/logs', id, 'events.ndjson'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"published"'));
    expect(published.map((l) => JSON.parse(l).event).filter((e: string) => e === 'completed' || e === 'error')).toEqual([]);
  });
});
