import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { hookAction } from '../../src/core/agents/hook-events.ts';
import { detachedHook } from '../../src/core/agents/presets.ts';
import { REPO_ROOT, type Workspace, makeWorkspace } from '../helpers/cli.ts';
import { startAnthropicServer } from './anthropic-server.ts';
import { startGeminiServer } from './gemini-server.ts';
import type { ModelServer } from './model-server.ts';
import { startOpenAiServer } from './openai-server.ts';
import { type RealCli, agentBinDir, cliVersion, describeWithCli, offlineEnv } from './real-clis.ts';

/**
 * The payloads the real CLIs hand to hooks, to Codex's notify program and to Claude's permission
 * prompt tool, recorded by `recorder.mjs` in a run against the scripted model. Each one is checked
 * against its fixture in test/fixtures/agents/: the same keys (values differ run to run), and `mam hook`
 * reads it as the event the fixture stands for. MAM_CAPTURE_FIXTURES=1 writes them there instead
 * (paths made neutral), with the CLI version in test/fixtures/agents/captured-versions.json.
 */
const RECORDER = path.join(REPO_ROOT, 'test/agents-real/recorder.mjs');
const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/agents');
const WRITE = process.env.MAM_CAPTURE_FIXTURES === '1';

let ws: Workspace;
let model: ModelServer | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
  ws?.cleanup();
});

/** Runs `argv` (the CLI through the agent-bin links) with `stdin`, to its end; its output for the failure message. */
function run(argv: string[], env: NodeJS.ProcessEnv, stdin: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: ws.root, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stdin.end(stdin);
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

async function setup(cli: RealCli, start: typeof startAnthropicServer, scenario: Parameters<typeof startAnthropicServer>[0]) {
  ws = makeWorkspace();
  model = await start(scenario);
  const dir = path.join(ws.root, 'captured');
  mkdirSync(dir);
  const env = { ...process.env, ...offlineEnv(cli, ws.root, model.url), PATH: `${agentBinDir(ws.root)}${path.delimiter}${process.env.PATH}` };
  return { dir, env };
}

/** The recorded payloads of `dir`, by name (the first of each: `claude-Stop.0.json` → `claude-Stop`). */
function recorded(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of readdirSync(dir).sort()) {
    const name = f.replace(/\.\d+\.json$/, '');
    if (!out.has(name)) out.set(name, readFileSync(path.join(dir, f), 'utf8'));
  }
  return out;
}

/** A payload with this run's folders replaced by neutral ones (`/tmp/project`), as a fixture holds it. */
function neutral(text: string): string {
  const root = ws.root;
  const dashed = root.replace(/[/.]/g, '-');
  const neutralText = text.split(root).join('/tmp/project').split(dashed).join('-tmp-project').split(path.basename(root)).join('project');
  // (Gemini names its per-project folder by the lowercased folder name.)
  const neutralLower = neutralText.split(path.basename(root).toLowerCase()).join('project');
  return `${JSON.stringify(JSON.parse(neutralLower), null, 2)}\n`;
}

const keysOf = (v: unknown): string[] => (v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v).sort() : []);

/**
 * Compares (or, with MAM_CAPTURE_FIXTURES=1, writes) each captured payload with its fixture, and
 * returns what was compared. `names` maps a recorded name to its fixture file.
 */
function check(cli: RealCli, dir: string, names: Record<string, string>): string[] {
  const got = recorded(dir);
  const done: string[] = [];
  for (const [name, fixture] of Object.entries(names)) {
    const text = got.get(name);
    expect(text, `${cli} did not hand over ${name}`).toBeDefined();
    const file = path.join(FIXTURES, fixture);
    if (WRITE) {
      writeFileSync(file, neutral(text!));
    } else {
      const live = JSON.parse(text!) as Record<string, unknown>;
      const fixed = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      expect(keysOf(live), `${fixture}: the keys ${cli} ${cliVersion(cli)} sends`).toEqual(keysOf(fixed));
    }
    done.push(fixture);
  }
  if (WRITE) {
    const versionsFile = path.join(FIXTURES, 'captured-versions.json');
    const versions = JSON.parse(readFileSync(versionsFile, 'utf8')) as Record<string, string>;
    versions[cli] = cliVersion(cli);
    writeFileSync(versionsFile, `${JSON.stringify(versions, null, 2)}\n`);
  }
  return done;
}

describeWithCli('claude', 'payloads captured from the real Claude Code', () => {
  it('hooks of a run with a tool call, the permission prompt tool, and StopFailure', async () => {
    const { dir, env } = await setup('claude', startAnthropicServer, [{ shell: 'touch captured.txt' }, { text: 'Done.' }]);
    const events = ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PermissionRequest', 'PostToolUse', 'Notification', 'Stop', 'StopFailure', 'SessionEnd'];
    // StopFailure's recorder hands its payload to the background like MAM's own hook (presets.ts):
    // Claude kills that hook's tree as it exits.
    const record = (e: string) => (e === 'StopFailure' ? detachedHook : (c: string) => c)(`node ${RECORDER} hook ${dir} claude-${e}`);
    const hooks = Object.fromEntries(events.map((e) => [e, [{ hooks: [{ type: 'command', command: record(e) }] }]]));
    const settings = path.join(ws.root, 'settings.json');
    writeFileSync(settings, JSON.stringify({ hooks }));
    const mcp = path.join(ws.root, 'mcp.json');
    writeFileSync(mcp, JSON.stringify({ mcpServers: { recorder: { command: process.execPath, args: [RECORDER, 'mcp', dir] } } }));
    const argv = ['claude', '-p', '--settings', settings, '--mcp-config', mcp, '--permission-prompt-tool', 'mcp__recorder__permission_prompt'];
    const ok = await run(argv, env, 'Make the file.');
    expect(ok.code, ok.output).toBe(0);
    await model!.close();
    // A second run, whose model fails: StopFailure (its shell hands the payload on and returns, see presets.ts).
    model = await startAnthropicServer([{ error: 'bad_request' }]);
    const failing = await run(argv, { ...env, ANTHROPIC_BASE_URL: model.url }, 'Make the file.');
    expect(failing.code, failing.output).toBe(1);
    await vi.waitFor(() => expect(recorded(dir).has('claude-StopFailure')).toBe(true), { timeout: 10_000 });
    const done = check('claude', dir, {
      'claude-SessionStart': 'claude-session-start.json',
      'claude-UserPromptSubmit': 'claude-user-prompt-submit.json',
      'claude-PreToolUse': 'claude-pre-tool-use.json',
      'claude-PermissionRequest': 'claude-permission-request.json',
      'claude-Stop': 'claude-stop.json',
      'claude-StopFailure': 'claude-stop-failure.json',
      'claude-SessionEnd': 'claude-session-end.json',
      'permission-prompt-tool-call': 'claude-permission-prompt-tool-call.json',
    });
    // Notification (permission_prompt) does not fire in `-p` with a permission prompt tool: the tool is asked at once.
    expect(recorded(dir).has('claude-Notification')).toBe(false);
    expect(hookAction('claude', readFileSync(path.join(FIXTURES, 'claude-stop-failure.json'), 'utf8'))).toMatchObject({ publish: 'error' });
    process.stderr.write(`captured from claude ${cliVersion('claude')}: ${done.join(', ')}\n`);
  });
});

describeWithCli('codex', 'payloads captured from the real Codex CLI', () => {
  it('notify and the hooks of a run with a tool call (hook trust bypassed for this run only)', async () => {
    const { dir, env } = await setup('codex', startOpenAiServer, [{ shell: 'echo captured' }, { text: 'Done.' }]);
    rmSync(path.join(ws.root, '.git'), { recursive: true });
    execFileSync('git', ['init', '-q', ws.root]);
    const events = ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PermissionRequest', 'PostToolUse', 'Stop'];
    const toml = (words: string[]) => `[${words.map((w) => JSON.stringify(w)).join(',')}]`;
    const hook = (e: string) => `hooks.${e}=[{hooks=[{type="command",command=${JSON.stringify(`node ${RECORDER} hook ${dir} codex-${e}`)},timeout=30}]}]`;
    const argv = [
      'codex',
      'exec',
      // Hooks given with -c run only once trusted; MAM's preset does not bypass that, the capture does.
      '--dangerously-bypass-hook-trust',
      '-c',
      `notify=${toml([process.execPath, RECORDER, 'arg', dir, 'codex-notify'])}`,
      ...events.flatMap((e) => ['-c', hook(e)]),
      '-',
    ];
    const ok = await run(argv, env, 'Say something.');
    expect(ok.code, ok.output).toBe(0);
    // notify is fire-and-forget: it may land after Codex exits.
    await vi.waitFor(() => expect(recorded(dir).has('codex-notify')).toBe(true), { timeout: 10_000 });
    const done = check('codex', dir, {
      'codex-notify': 'codex-notify-agent-turn-complete.json',
      'codex-SessionStart': 'codex-session-start.json',
      'codex-UserPromptSubmit': 'codex-user-prompt-submit.json',
      'codex-PreToolUse': 'codex-pre-tool-use.json',
      'codex-Stop': 'codex-stop.json',
    });
    expect(hookAction('codex-notify', readFileSync(path.join(FIXTURES, 'codex-notify-agent-turn-complete.json'), 'utf8'))).toMatchObject({
      publish: 'completed',
    });
    process.stderr.write(`captured from codex ${cliVersion('codex')}: ${done.join(', ')}; fired: ${[...recorded(dir).keys()].join(', ')}\n`);
  });
});

describeWithCli('gemini', 'payloads captured from the real Gemini CLI', () => {
  it('the hooks of a headless run (hooks in the user settings of the test home)', async () => {
    const { dir, env } = await setup('gemini', startGeminiServer, [{ text: 'Done.' }]);
    const events = ['SessionStart', 'BeforeAgent', 'AfterAgent', 'BeforeModel', 'Notification', 'SessionEnd'];
    const settingsFile = path.join(ws.root, '.gemini', 'settings.json');
    const settings = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
    // Gemini's hook timeout is in milliseconds.
    settings.hooks = Object.fromEntries(
      events.map((e) => [e, [{ hooks: [{ name: `record-${e}`, type: 'command', command: `node ${RECORDER} hook ${dir} gemini-${e}`, timeout: 30_000 }] }]]),
    );
    writeFileSync(settingsFile, JSON.stringify(settings));
    const ok = await run(['gemini'], env, 'Say something.');
    expect(ok.code, ok.output).toBe(0);
    const done = check('gemini', dir, {
      'gemini-SessionStart': 'gemini-session-start.json',
      'gemini-AfterAgent': 'gemini-after-agent.json',
      'gemini-SessionEnd': 'gemini-session-end.json',
    });
    process.stderr.write(`captured from gemini ${cliVersion('gemini')}: ${done.join(', ')}; fired: ${[...recorded(dir).keys()].join(', ')}\n`);
  });
});
