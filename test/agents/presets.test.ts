import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { shellQuote } from '../../src/core/bin-path.ts';
import { type PresetContext, agentLaunch, claudeMcpConfig, claudeSettings, detachedHook } from '../../src/core/agents/presets.ts';

const TOKEN = 'b'.repeat(32);
const ctx = (mode: 'headless' | 'pane'): PresetContext => ({
  record: { job_id: 'abcd0001', attempt_id: 3, dispatch_token: TOKEN, brief: 'echo "it\'s $HOME"' },
  mode,
  prompt: 'PREAMBLE\n# Your task\n\nthe brief\n',
  paths: { promptFile: '/w/.mam/logs/abcd0001/agent/prompt.md', claudeSettingsFile: '/w/s.json', mcpConfigFile: '/w/m.json' },
  mam: ['/usr/bin/node', '/pkg/bin/mam.js'],
  serverEnv: { MAM_REAL_ROOT: '/w' },
});

/** The words `sh` makes of a command line (what the agent's argv will be). */
const argvOf = (command: string): string[] => {
  const r = spawnSync('sh', ['-c', `set -- ${command}; printf '%s\\0' "$@"`], { encoding: 'utf8' });
  return r.stdout.split('\0').slice(0, -1);
};

const FENCE = ['--job', 'abcd0001', '--attempt-id', '3', '--expect-dispatch-token', TOKEN];

describe('agent presets', () => {
  it('claude headless: -p with the per-job settings, the MCP permission server and the prompt on stdin', () => {
    const launch = agentLaunch('claude', ctx('headless'));
    expect(argvOf(launch.command)).toEqual([
      'claude',
      '-p',
      '--settings',
      '/w/s.json',
      '--mcp-config',
      '/w/m.json',
      '--permission-prompt-tool',
      'mcp__mam__permission_prompt',
    ]);
    expect(launch.stdinFile).toBe('/w/.mam/logs/abcd0001/agent/prompt.md');
    expect(launch.files.map((f) => f.path)).toEqual(['/w/s.json', '/w/m.json']);
  });

  it("claude's settings: synchronous command hooks for SessionStart, permission prompts and Stop; StopFailure handed to the background; no SessionEnd", () => {
    const { hooks } = JSON.parse(claudeSettings(ctx('headless')));
    expect(Object.keys(hooks).sort()).toEqual(['Notification', 'SessionStart', 'Stop', 'StopFailure']);
    expect(hooks.Notification[0].matcher).toBe('permission_prompt');
    const hook = ['/usr/bin/node', '/pkg/bin/mam.js', 'hook', '--from', 'claude', ...FENCE];
    for (const [event, groups] of Object.entries(hooks) as [string, { hooks: { type: string; command: string; async?: boolean }[] }[]][]) {
      const [handler] = groups[0]!.hooks;
      expect(handler!.type).toBe('command');
      expect(handler!.async).toBeUndefined();
      if (event !== 'StopFailure') expect(argvOf(handler!.command)).toEqual(hook);
    }
    // Claude kills a StopFailure hook's tree as it exits (test/agents-real/claude.test.ts shows it):
    // the shell passes its stdin on to a background `mam hook` and returns.
    const stopFailure = hooks.StopFailure[0].hooks[0].command as string;
    expect(stopFailure).toBe(`exec 3<&0; ${hook.map(shellQuote).join(' ')} <&3 3<&- >/dev/null 2>&1 &`);
  });

  it("a detached hook still reads its payload from the hook shell's stdin, and the shell returns before it ends", () => {
    const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'mam-detached-')), 'payload');
    const started = performance.now();
    const r = spawnSync('sh', ['-c', detachedHook(`sh -c 'sleep 0.3; cat > ${out}'`)], { input: '{"hook_event_name":"StopFailure"}', encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(performance.now() - started).toBeLessThan(250);
    expect(existsSync(out)).toBe(false);
    return vi.waitFor(() => expect(readFileSync(out, 'utf8')).toBe('{"hook_event_name":"StopFailure"}'), { timeout: 5_000 });
  });

  it("claude's MCP config: server `mam` running `mam mcp-permission`, fenced to the attempt, with the job's variables", () => {
    expect(JSON.parse(claudeMcpConfig(ctx('headless')))).toEqual({
      mcpServers: { mam: { command: '/usr/bin/node', args: ['/pkg/bin/mam.js', 'mcp-permission', ...FENCE], env: { MAM_REAL_ROOT: '/w' } } },
    });
  });

  it('codex exec: notify gets the turn JSON as the value of --payload; the prompt from stdin (`-`)', () => {
    const launch = agentLaunch('codex', ctx('headless'));
    // Wrapped like aider: `started` from MAM before it, the exit code's outcome after (see presets.ts).
    const lines = launch.command.split('\n');
    expect(lines[0]).toContain('hook --from wrapper');
    expect(lines.at(-2)).toContain('--on exit --exit-code "$rc"');
    const argv = argvOf(lines[1]!);
    expect(argv.slice(0, 2)).toEqual(['codex', 'exec']);
    expect(argv.at(-1)).toBe('-');
    const notify = argv[argv.indexOf('-c') + 1]!;
    expect(JSON.parse(notify.slice('notify='.length))).toEqual(['/usr/bin/node', '/pkg/bin/mam.js', 'hook', '--from', 'codex-notify', ...FENCE, '--payload']);
    // No hooks: Codex 0.171 runs `-c` hooks only once trusted, and its TUI stops at a review screen for them.
    expect(argv.filter((a) => a.startsWith('hooks.'))).toEqual([]);
    expect(launch.stdinFile).toBeDefined();
  });

  it('aider and shell are wrapped: started before, the outcome by exit code after', () => {
    const aider = agentLaunch('aider', ctx('headless')).command;
    expect(aider).toContain('--message-file /w/.mam/logs/abcd0001/agent/prompt.md');
    expect(aider.split('\n')[0]).toContain('hook --from wrapper');
    expect(aider).toContain('--on exit --exit-code "$rc"');
    // The brief is the shell command, quoted as one word for `sh -c`.
    const shell = agentLaunch('shell', ctx('headless')).command.split('\n')[1]!;
    expect(argvOf(shell)).toEqual(['sh', '-c', 'echo "it\'s $HOME"']);
  });

  it('claude in a pane: the prompt is its first argument (from the prompt file), neither typed nor piped', () => {
    const launch = agentLaunch('claude', ctx('pane'));
    expect(launch.terminalPrompt).toBeUndefined();
    expect(launch.stdinFile).toBeUndefined();
    expect(launch.command).toBe(`claude --settings /w/s.json "$(cat /w/.mam/logs/abcd0001/agent/prompt.md)"`);
  });

  it.each([
    ['codex', /^'?\/usr\/bin\/node'? .*--on start.*\ncodex -c .* "\$\(cat \/w\/\.mam\/logs\/abcd0001\/agent\/prompt\.md\)"\n/],
    ['gemini', /--on start.*\ngemini -i "\$\(cat \/w\/\.mam\/logs\/abcd0001\/agent\/prompt\.md\)"\n/],
  ] as const)('%s in a pane: wrapped, the prompt its first argument, neither typed nor piped', (name, shape) => {
    const launch = agentLaunch(name, ctx('pane'));
    expect(launch.terminalPrompt).toBeUndefined();
    expect(launch.stdinFile).toBeUndefined();
    expect(launch.command).toMatch(shape);
  });

  it.each(['aider'] as const)('%s in a pane: the prompt is typed into the terminal, not piped', (name) => {
    const launch = agentLaunch(name, ctx('pane'));
    expect(launch.terminalPrompt).toBe('PREAMBLE\n# Your task\n\nthe brief\n');
    expect(launch.stdinFile).toBeUndefined();
    expect(launch.command).not.toContain(' -p ');
  });
});
