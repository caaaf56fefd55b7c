import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT, type Workspace, binPath, makeWorkspace } from '../helpers/cli.ts';
import { freePort } from '../helpers/free-port.ts';
import { waitUntil } from '../helpers/wait.ts';

const AGENT = path.join(REPO_ROOT, 'examples/fake-agent.sh');

interface Run {
  child: ChildProcess;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
  stderr: () => string;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** `mam delegate … --json` as a user's script runs it (the broker is in this process: never block). */
function delegate(ws: Workspace, args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const child = spawn(process.execPath, [binPath('mam'), 'delegate', '--json', ...args], {
    cwd: ws.root,
    env: { ...ws.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done, stderr: () => stderr };
}

const onlyRecord = (ws: Workspace) => {
  const dir = path.join(ws.root, '.mam/jobs');
  const file = readdirSync(dir).find((f) => /^[0-9a-f]{8}\.json$/.test(f))!;
  return JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
};
const events = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** No timer of the job outlives the delegation. */
const noTimerLeft = async (ws: Workspace) => {
  const dir = path.join(ws.root, '.mam/jobs');
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.heartbeat.pid'))) {
    const pid = Number(readFileSync(path.join(dir, f), 'utf8'));
    await waitUntil(() => !alive(pid), 5_000, 100);
    expect(alive(pid)).toBe(false);
  }
};

describe('mam delegate, end to end', () => {
  let broker: TestBroker;
  let env: NodeJS.ProcessEnv;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
    env = { MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port), STEP_SECONDS: '0.2' };
  });

  it('success: JSON lines only on stdout, started … completed, exit 0', async () => {
    const ws = makeWorkspace(env);
    const r = await delegate(ws, ['--brief', 'hello', '--exec', AGENT]).done;
    expect(r.code).toBe(0);
    expect(
      events(r.stdout)
        .map((e) => e.event)
        .filter((e) => e !== 'progress'),
    ).toEqual(['started', 'completed']);
    expect(onlyRecord(ws).status).toBe('completed');
    await noTimerLeft(ws);
  });

  it("the agent's error: exit 1", async () => {
    const ws = makeWorkspace({ ...env, FAIL: '1' });
    const r = await delegate(ws, ['--brief', 'fail', '--exec', AGENT]).done;
    expect(r.code).toBe(1);
    expect(events(r.stdout).at(-1)).toMatchObject({ event: 'error' });
    await noTimerLeft(ws);
  });

  it('an agent that never starts is failed closed in the ack time: error agent_blocked, exit 1, agent gone', async () => {
    const ws = makeWorkspace(env);
    const pidFile = path.join(ws.root, 'agent.pid');
    const started = Date.now();
    const r = await delegate(ws, ['--brief', 'b', '--ack-timeout', '2', '--exec', `echo $$ > ${pidFile}; exec sleep 30`]).done;
    expect(r.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(12_000);
    expect(onlyRecord(ws)).toMatchObject({ status: 'error', detail: 'agent_blocked' });
    expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  it('an agent that goes silent after started: closed deadline_timeout, exit 2', async () => {
    const ws = makeWorkspace(env);
    const r = await delegate(ws, ['--brief', 'b', '--idle-timeout', '2', '--exec', '$MAM_PUBLISH_CMD --event started >/dev/null; exec sleep 30']).done;
    expect(r.code).toBe(2);
    expect(onlyRecord(ws)).toMatchObject({ status: 'error', detail: 'deadline_timeout' });
  });

  it('SIGINT: the agent is stopped, the job closed cancelled, exit 1', async () => {
    const ws = makeWorkspace(env);
    const pidFile = path.join(ws.root, 'agent.pid');
    const run = delegate(ws, ['--brief', 'b', '--exec', `echo $$ > ${pidFile}; $MAM_PUBLISH_CMD --event started >/dev/null; exec sleep 30`]);
    await waitUntil(() => existsSync(path.join(ws.root, '.mam/jobs')) && onlyRecordSafe(ws)?.status === 'running', 15_000);
    run.child.kill('SIGINT');
    const r = await run.done;
    expect(r.code).toBe(1);
    expect(onlyRecord(ws).status).toBe('cancelled');
    expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  it('examples/wrapper.sh, the same flow by hand, ends 0 with the JSON lines on stdout', async () => {
    const ws = makeWorkspace(env);
    const child = spawn(path.join(REPO_ROOT, 'examples/wrapper.sh'), ['by hand', AGENT], { cwd: ws.root, env: ws.env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(events(stdout).at(-1)).toMatchObject({ event: 'completed' });
  });

  it('a remote session: dispatched to a runner in another workspace, exit 0', async () => {
    const secret = { MAM_DISPATCH_SECRET: 'delegate-remote-secret' };
    const a = makeWorkspace({ ...env, ...secret });
    const b = makeWorkspace({ ...env, ...secret });
    const runner = spawn(process.execPath, [binPath('mam-remote'), 'run', '--session', 'dlg-remote', '--once', '--exec', AGENT], {
      cwd: b.root,
      env: b.env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(runner);
    let rs = '';
    await new Promise<void>((resolve) => runner.stderr!.on('data', (d: Buffer) => (rs += d.toString()).includes('SUBSCRIBED') && resolve()));
    const r = await delegate(a, ['--brief', 'remote', '--remote', 'dlg-remote']).done;
    expect(r.code).toBe(0);
    expect(onlyRecord(a)).toMatchObject({ status: 'completed', transport: 'remote' });
  });
});

function onlyRecordSafe(ws: Workspace): { status: string } | undefined {
  try {
    return onlyRecord(ws);
  } catch {
    return undefined;
  }
}

describe('mam delegate and the embedded broker', () => {
  it('starts the embedded broker when nothing answers at a loopback address, and succeeds', async () => {
    const ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(await freePort()), STEP_SECONDS: '0.2' });
    const r = await delegate(ws, ['--brief', 'embedded', '--exec', AGENT]).done;
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('started the embedded one');
  });

  it('--no-embedded-broker with nothing listening: exit 3, quickly', async () => {
    const ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(await freePort()) });
    const started = Date.now();
    const r = await delegate(ws, ['--brief', 'nobroker', '--no-embedded-broker', '--exec', AGENT]).done;
    expect(r.code).toBe(3);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
