import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT, type Workspace, binPath, makeWorkspace } from '../helpers/cli.ts';
import { runInProcess } from '../helpers/in-process.ts';
import { startWatcher } from '../subscriber/watcher.ts';

const fixture = (name: string) => readFileSync(path.join(REPO_ROOT, 'test/fixtures/agents', `${name}.json`), 'utf8');

/**
 * `mam hook …` as an agent CLI runs it: through `sh -c` (so the heartbeat a `started` arms watches
 * that shell, which ends at once), the payload on stdin. Async: the broker runs in this process.
 */
function hook(ws: Workspace, args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const command = [process.execPath, binPath('mam'), 'hook', ...args].map((w) => `'${w}'`).join(' ');
    const child = spawn('sh', ['-c', command], { cwd: ws.root, env: ws.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdin.end(stdin);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const published = (ws: Workspace, id: string) =>
  readFileSync(path.join(ws.root, '.mam/logs', id, 'events.ndjson'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((l) => l.type === 'published')
    .map((l) => l.event);

describe('mam hook: agent hooks become signed events', () => {
  let broker: TestBroker;
  let ws: Workspace;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  afterEach(() => ws?.cleanup());
  const register = async () => {
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    return JSON.parse((await runInProcess('mam-register', ['--brief', 'b'], ws)).stdout).job_id as string;
  };

  // Each source's documented payloads, in the order a run fires them (fixtures name their source).
  const runs: [string, [string, string[]][], string[]][] = [
    [
      'claude',
      [
        ['claude-session-start', []],
        ['claude-notification-idle-prompt', []],
        ['claude-notification-permission-prompt', []],
        ['claude-session-start', []],
        ['claude-stop', []],
        ['claude-session-end', []],
      ],
      ['started', 'permission_required', 'completed'],
    ],
    ['claude', [['claude-stop-failure', []]], ['error']],
    [
      'codex',
      [
        ['codex-session-start', []],
        ['codex-permission-request', []],
        ['codex-stop', []],
      ],
      ['started', 'permission_required', 'completed'],
    ],
    [
      'gemini',
      [
        ['gemini-session-start', []],
        ['gemini-notification-tool-permission', []],
        ['gemini-after-agent', []],
        ['gemini-session-end', []],
      ],
      ['started', 'permission_required', 'completed'],
    ],
  ];
  it.each(runs)('--from %s: %j', async (from, calls, expected) => {
    const id = await register();
    const watch = startWatcher(ws, ['--job', id, '--timeout', '20']);
    await watch.subscribed();
    for (const [name] of calls) {
      const r = await hook(ws, ['--from', from, '--job', id], fixture(name));
      expect(r.code, r.stderr).toBe(0);
      // Claude adds a SessionStart hook's stdout to the agent's context: nothing is printed.
      expect(r.stdout).toBe('');
    }
    await watch.exit(20_000);
    expect(watch.events().map((e) => e.event)).toEqual(expected);
    expect(published(ws, id)).toEqual(expected);
  });

  it('--from codex-notify: the JSON Codex appends as the last argument', async () => {
    const id = await register();
    expect((await hook(ws, ['--from', 'codex-notify', '--job', id, '--payload', fixture('codex-notify-agent-turn-complete')])).code).toBe(0);
    expect(published(ws, id)).toEqual(['completed']);
    expect(JSON.parse((await runInProcess('mam', ['show', '--job', id], ws)).stdout).status).toBe('completed');
  });

  it('--from wrapper: started, then the outcome by the exit code', async () => {
    const id = await register();
    expect((await hook(ws, ['--from', 'wrapper', '--job', id, '--on', 'start'])).code).toBe(0);
    expect((await hook(ws, ['--from', 'wrapper', '--job', id, '--on', 'exit', '--exit-code', '3'])).code).toBe(0);
    expect(published(ws, id)).toEqual(['started', 'error']);
    expect(JSON.parse((await runInProcess('mam', ['show', '--job', id], ws)).stdout).status).toBe('error');
    const lines = readFileSync(path.join(ws.root, '.mam/logs', id, 'events.ndjson'), 'utf8');
    expect(lines).toContain('Agent exited with code 3');
  });

  it("after the agent's own outcome, a Stop hook publishes nothing and exits 0", async () => {
    const id = await register();
    expect((await runInProcess('mam-publish', ['--job', id, '--event', 'started'], ws)).code).toBe(0);
    expect((await runInProcess('mam-publish', ['--job', id, '--event', 'error', '--detail', 'gave up'], ws)).code).toBe(0);
    const r = await hook(ws, ['--from', 'claude', '--job', id], fixture('claude-stop'));
    expect(r.code).toBe(0);
    expect(published(ws, id)).toEqual(['started', 'error']);
  });

  it("a replaced attempt's hook is refused (exit 5) and changes nothing", async () => {
    const id = await register();
    const { dispatch_token } = JSON.parse((await runInProcess('mam', ['show', '--job', id], ws)).stdout);
    expect((await runInProcess('mam', ['redispatch', '--job', id], ws)).code).toBe(0);
    const r = await hook(ws, ['--from', 'claude', '--job', id, '--attempt-id', '1', '--expect-dispatch-token', dispatch_token], fixture('claude-stop'));
    expect(r.code).toBe(5);
    expect(JSON.parse((await runInProcess('mam', ['show', '--job', id], ws)).stdout)).toMatchObject({ status: 'pending', attempt_id: 2, last_seq: 0 });
  });

  it.each([
    ['not JSON', ['--from', 'claude'], '{"hook_event_name": ', /the input is not JSON/],
    ['not a hook payload', ['--from', 'claude'], '{"event": "Stop"}', /not a claude hook payload/],
    ['--payload with a stdin source', ['--from', 'claude', '--payload', '{}'], '', /--payload: only with --from codex-notify/],
    ['--on without the wrapper', ['--from', 'codex', '--on', 'start'], '', /--on and --exit-code: only with --from wrapper/],
    ['an unknown source', ['--from', 'cursor'], '', /--from/],
  ])('bad input (%s): one line, exit 64, the record untouched', async (_what, args, stdin, message) => {
    const id = await register();
    const before = readFileSync(path.join(ws.root, '.mam/jobs', `${id}.json`), 'utf8');
    const r = await hook(ws, [...args, '--job', id], stdin);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(readFileSync(path.join(ws.root, '.mam/jobs', `${id}.json`), 'utf8')).toBe(before);
  });
});
