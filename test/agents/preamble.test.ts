import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PREAMBLE_VERSION, agentPrompt, preambleTemplate, renderPreamble } from '../../src/core/agents/preamble.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT, type Workspace, makeWorkspace, runBin } from '../helpers/cli.ts';
import { startWatcher } from '../subscriber/watcher.ts';

const record = { job_id: 'abcd0001', attempt_id: 2, dispatch_token: 'a'.repeat(32), heartbeat_sec: 30, brief: 'Fix the flaky test.' };

describe('the agent preamble', () => {
  it('is the versioned template shipped in assets/, every placeholder known', () => {
    const text = readFileSync(path.join(REPO_ROOT, 'assets/agent-preamble.md'), 'utf8');
    expect(text.split('\n')[0]).toContain(`mam-preamble v${PREAMBLE_VERSION}`);
    expect(preambleTemplate()).toBe(text);
    const out = renderPreamble(record);
    expect(out).not.toMatch(/\{\{|\}\}/);
    expect(out).not.toContain('mam-preamble');
  });

  it('names the job, the attempt fence, the heartbeat and every event an agent reports', () => {
    const out = renderPreamble(record);
    for (const event of ['started', 'progress', 'permission_required', 'completed', 'error']) expect(out).toContain(`--event ${event} `);
    expect(out).toContain('--job abcd0001');
    expect(out).toContain(`--attempt-id 2 --expect-dispatch-token ${'a'.repeat(32)}`);
    expect(out).toContain('--heartbeat 30');
    expect(out).toMatch(/never\s+hold file paths/);
  });

  it('refuses a template of another version or with an unknown placeholder', () => {
    expect(() => renderPreamble(record, '<!-- mam-preamble v9 -->\nx')).toThrow(/expected a mam-preamble v1/);
    expect(() => renderPreamble(record, `<!-- mam-preamble v${PREAMBLE_VERSION} -->\n{{nope}}`)).toThrow(/unknown placeholder \{\{nope\}\}/);
  });

  it('comes before the brief, which is kept as given', () => {
    const prompt = agentPrompt(record);
    expect(prompt.endsWith('# Your task\n\nFix the flaky test.\n')).toBe(true);
  });
});

/** `sh -c` without blocking: the broker runs in this process. */
function sh(command: string, ws: Workspace): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', command], { cwd: ws.root, env: ws.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('the preamble, followed to the letter', () => {
  let broker: TestBroker;
  let ws: Workspace;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  afterEach(() => ws?.cleanup());

  it('its commands, run as written, carry a job from pending to completed; `mam brief` prints it', async () => {
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    const reg = runBin('mam-register', ['--brief', 'Say hello', '--heartbeat', '5'], ws);
    const id = JSON.parse(reg.stdout).job_id as string;
    const brief = runBin('mam', ['brief', '--job', id], ws);
    expect(brief.code).toBe(0);
    expect(brief.stdout.endsWith('# Your task\n\nSay hello\n')).toBe(true);
    const only = runBin('mam', ['brief', '--job', id, '--preamble-only'], ws);
    expect(only.stdout).not.toContain('Say hello');
    const command = (event: string) =>
      brief.stdout
        .split('\n')
        .find((l) => l.includes(`--event ${event} `))!
        .trim()
        .replace(/"<[^>]*>"/, '"step"');
    const watch = startWatcher(ws, ['--job', id, '--timeout', '20']);
    await watch.subscribed();
    for (const event of ['started', 'progress', 'permission_required', 'completed']) {
      const r = await sh(command(event), ws);
      expect(r.code, r.stderr).toBe(0);
    }
    expect((await watch.exit(20_000)).code).toBe(0);
    expect(watch.events().map((e) => e.event)).toEqual(['started', 'progress', 'permission_required', 'completed']);
  });

  it('a replaced attempt: the old preamble commands are refused (exit 5)', async () => {
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    const id = JSON.parse(runBin('mam-register', ['--brief', 'b'], ws).stdout).job_id as string;
    const old = runBin('mam', ['brief', '--job', id, '--preamble-only'], ws).stdout;
    expect(runBin('mam', ['redispatch', '--job', id], ws).code).toBe(0);
    const started = old
      .split('\n')
      .find((l) => l.includes('--event started '))!
      .trim();
    expect((await sh(started, ws)).code).toBe(5);
  });

  it('mam brief of an unknown job: one line, exit 66', () => {
    ws = makeWorkspace();
    const r = runBin('mam', ['brief', '--job', 'abcd0009'], ws);
    expect(r.code).toBe(66);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
