import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT, type Workspace, binPath, makeWorkspace } from '../helpers/cli.ts';

/** Stand-ins for the agent CLIs (test/fixtures/agents/bin/), first on PATH as the real ones would be. */
const STAND_INS = path.join(REPO_ROOT, 'test/fixtures/agents/bin');

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

function delegate(ws: Workspace, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [binPath('mam'), 'delegate', '--json', ...args], {
    cwd: ws.root,
    env: { ...ws.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

const eventsOf = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l).event);

describe('mam delegate --agent: a real agent CLI reports without being told about MAM', () => {
  let broker: TestBroker;
  let ws: Workspace;
  let out: string;
  let env: NodeJS.ProcessEnv;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  const setup = (behaviour = 'ok') => {
    out = mkdtempSync(path.join(os.tmpdir(), 'mam-stand-in-'));
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    env = {
      PATH: `${STAND_INS}${path.delimiter}${process.env.PATH}`,
      STAND_IN_BEHAVIOUR: behaviour,
      STAND_IN_PROMPT_OUT: path.join(out, 'prompt'),
      STAND_IN_ARGV_OUT: path.join(out, 'argv'),
    };
  };
  afterEach(() => ws?.cleanup());

  it('claude: hooks publish started and completed; the prompt is the preamble, then the brief', async () => {
    setup();
    const r = await delegate(ws, ['--agent', 'claude', '--brief', 'Tidy the imports.'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(eventsOf(r.stdout)).toEqual(['started', 'completed']);
    const prompt = readFileSync(path.join(out, 'prompt'), 'utf8');
    expect(prompt).toMatch(/^# Before you start: report your progress with MAM/);
    expect(prompt.endsWith('# Your task\n\nTidy the imports.\n')).toBe(true);
    const argv = JSON.parse(readFileSync(path.join(out, 'argv'), 'utf8')) as string[];
    expect(argv.slice(0, 2)).toEqual(['-p', '--settings']);
    expect(argv).toContain('--permission-prompt-tool');
    // The per-job files are private to the user.
    expect(statSync(argv[2]!).mode & 0o777).toBe(0o600);
  });

  it('claude, following the preamble too: its own events count, and the Stop hook adds nothing after its outcome', async () => {
    setup('obedient');
    const r = await delegate(ws, ['--agent', 'claude', '--brief', 'b'], env);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // SessionStart's hook first, then the agent's own `started` (a repeated `started` is allowed).
    expect(lines.map((l) => [l.event, l.detail])).toEqual([
      ['started', 'Claude Code session started'],
      ['started', 'Started'],
      ['completed', 'done by the stand-in'],
    ]);
  });

  it('claude asking for permission: permission_required, and the answer to type on stderr', async () => {
    setup('permission-prompt');
    const r = await delegate(ws, ['--agent', 'claude', '--brief', 'b'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(eventsOf(r.stdout)).toEqual(['started', 'permission_required', 'completed']);
    expect(r.stderr).toMatch(/permission required \(seq 2\): mam approve --job [0-9a-f]{8} --seq 2/);
  });

  it('claude failing on an API error: error, exit 1', async () => {
    setup('api-error');
    const r = await delegate(ws, ['--agent', 'claude', '--brief', 'b'], env);
    expect(r.code).toBe(1);
    expect(eventsOf(r.stdout)).toEqual(['started', 'error']);
  });

  it('codex: started from the wrapper, completed by notify; the prompt on stdin (`codex exec -`)', async () => {
    setup();
    const r = await delegate(ws, ['--agent', 'codex', '--brief', 'Rename the flag.'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(eventsOf(r.stdout)).toEqual(['started', 'completed']);
    expect(readFileSync(path.join(out, 'prompt'), 'utf8').endsWith('Rename the flag.\n')).toBe(true);
  });

  it('codex failing: error from the wrapper by its exit code, exit 1', async () => {
    setup('crash');
    const r = await delegate(ws, ['--agent', 'codex', '--brief', 'b'], env);
    expect(r.code).toBe(1);
    expect(eventsOf(r.stdout)).toEqual(['started', 'error']);
    expect(r.stdout).toContain('Agent exited with code 3');
  });

  // aider is Python, and PyPI is out of reach here: its preset runs the stand-in (fixtures/agents/bin/aider).
  it('aider: wrapped, started before it, completed by exit 0; the prompt from --message-file', async () => {
    setup();
    const r = await delegate(ws, ['--agent', 'aider', '--brief', 'Rename the flag.'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(eventsOf(r.stdout)).toEqual(['started', 'completed']);
    expect(readFileSync(path.join(out, 'prompt'), 'utf8').endsWith('Rename the flag.\n')).toBe(true);
    expect(JSON.parse(readFileSync(path.join(out, 'argv'), 'utf8'))).toEqual(expect.arrayContaining(['--no-check-update', '--no-pretty', '--message-file']));
  });

  it('aider failing (its usage error, exit 2): error by the exit code at once, exit 1', async () => {
    setup('bad-args');
    const r = await delegate(ws, ['--agent', 'aider', '--brief', 'b'], env);
    expect(r.code).toBe(1);
    expect(eventsOf(r.stdout)).toEqual(['started', 'error']);
    expect(r.stdout).toContain('Agent exited with code 2');
  });

  it('aider after an API failure exits 0 (Aider-AI/aider#5552): MAM can only report completed', async () => {
    setup('api-error');
    const r = await delegate(ws, ['--agent', 'aider', '--brief', 'b'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(eventsOf(r.stdout)).toEqual(['started', 'completed']);
  });

  it('shell: the brief is the command; started and completed come from the wrapper', async () => {
    setup();
    const r = await delegate(ws, ['--agent', 'shell', '--brief', 'test "$JOB_ID" != ""'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(eventsOf(r.stdout)).toEqual(['started', 'completed']);
    const failed = await delegate(ws, ['--agent', 'shell', '--brief', 'exit 7'], env);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('Agent exited with code 7');
  });

  it('--exec: the prompt (preamble and brief) on stdin, as the Python toolkit pre-seeded it', async () => {
    setup();
    const r = await delegate(ws, ['--exec', `cat > ${out}/stdin; ${path.join(REPO_ROOT, 'examples/fake-agent.sh')}`, '--brief', 'Say hi'], {
      ...env,
      STEP_SECONDS: '0.1',
    });
    expect(r.code, r.stderr).toBe(0);
    const stdin = readFileSync(path.join(out, 'stdin'), 'utf8');
    expect(stdin).toMatch(/^# Before you start/);
    expect(stdin.endsWith('Say hi\n')).toBe(true);
  });
});
