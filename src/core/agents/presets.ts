import { shellQuote } from '../bin-path.ts';
import type { JobRecord } from '../registry/job-record.ts';

/**
 * How each agent CLI takes its prompt and reports (docs/agent-cli-facts.md has the sources). Pure:
 * argv and file contents only, so the tests check them as data; agent-launch.ts writes the files.
 */
export const AGENT_NAMES = ['claude', 'codex', 'gemini', 'aider', 'shell'] as const;
export type AgentName = (typeof AGENT_NAMES)[number];

/** `headless`: the agent runs to the end on its own; `pane`: in a terminal a person may watch (tmux). */
export type LaunchMode = 'headless' | 'pane';

/** Where a launch's files go (the job's audit folder; agent-launch.ts). */
export interface LaunchPaths {
  promptFile: string;
  claudeSettingsFile: string;
  mcpConfigFile: string;
}

export interface PresetContext {
  record: Pick<JobRecord, 'job_id' | 'attempt_id' | 'dispatch_token' | 'brief'>;
  mode: LaunchMode;
  /** The preamble and the brief (preamble.ts): on stdin, in a file, or typed into the pane. */
  prompt: string;
  paths: LaunchPaths;
  /** The words that run `mam` (`[node, …/bin/mam.js]`): hooks and the MCP server call it. */
  mam: readonly string[];
  /** Handed to the MCP permission server, which Claude may start with a reduced environment. */
  serverEnv: Record<string, string>;
}

export interface AgentLaunch {
  /** The agent's command line for `sh -c`. */
  command: string;
  /** A file whose content is the agent's stdin (its prompt); else stdin is empty. */
  stdinFile?: string | undefined;
  /** Typed into the pane once the agent is up: interactive agents read their prompt from the terminal. */
  terminalPrompt?: string | undefined;
  /** Files to write before the start (mode 0600): settings and MCP configs. */
  files: { path: string; content: string }[];
}

/** The MCP tool Claude asks for permission in headless runs: server `mam`, tool `permission_prompt`. */
export const PERMISSION_PROMPT_TOOL = 'mcp__mam__permission_prompt';

const words = (argv: readonly string[]) => argv.map(shellQuote).join(' ');

/** `mam hook …` for one agent, fenced to this attempt so that a replaced attempt's hooks are refused. */
export function hookCommand(ctx: PresetContext, from: string, extra: readonly string[] = []): string[] {
  const { record } = ctx;
  return [
    ...ctx.mam,
    'hook',
    '--from',
    from,
    '--job',
    record.job_id,
    '--attempt-id',
    String(record.attempt_id),
    '--expect-dispatch-token',
    record.dispatch_token,
    ...extra,
  ];
}

/** Claude Code's per-job settings (`--settings`): hooks are synchronous, so each event is out before Claude goes on. */
export function claudeSettings(ctx: PresetContext): string {
  const command = words(hookCommand(ctx, 'claude'));
  const on = (run: string, matcher?: string) => [{ ...(matcher === undefined ? {} : { matcher }), hooks: [{ type: 'command', command: run, timeout: 30 }] }];
  // No SessionEnd: Stop / StopFailure and the process's end are what close a run (SessionEnd did not
  // fire on a `claude -p` exit in v2.1.216, anthropics/claude-code#79702).
  const hooks = { SessionStart: on(command), Notification: on(command, 'permission_prompt'), Stop: on(command), StopFailure: on(detachedHook(command)) };
  return `${JSON.stringify({ hooks }, null, 2)}\n`;
}

/**
 * StopFailure is not waited for: `claude -p` exits right after it and kills the hook's process tree
 * within milliseconds (seen with 2.1.332: a Node hook got SIGTERM before it was up, so the `error`
 * was never published and the job waited for the agent's exit to be noticed). The hook's shell hands
 * its stdin (the payload) to `mam hook` in the background and returns at once; the background
 * process, no longer in the tree, publishes. Its output is not read by Claude for this event.
 */
export function detachedHook(command: string): string {
  return `exec 3<&0; ${command} <&3 3<&- >/dev/null 2>&1 &`;
}

/**
 * `--mcp-config`: the MCP server that answers Claude's permission prompts from the broker, fenced
 * like the hooks, so that a replaced attempt's Claude can neither ask nor be answered.
 */
export function claudeMcpConfig(ctx: PresetContext): string {
  const fence = ['--attempt-id', String(ctx.record.attempt_id), '--expect-dispatch-token', ctx.record.dispatch_token];
  const [command = 'mam', ...args] = [...ctx.mam, 'mcp-permission', '--job', ctx.record.job_id, ...fence];
  return `${JSON.stringify({ mcpServers: { mam: { command, args, env: ctx.serverEnv } } }, null, 2)}\n`;
}

/** A TOML array of strings for Codex's `-c key=value` (TOML basic strings take JSON's escapes). */
const toml = {
  array: (items: readonly string[]) => `[${items.map((s) => JSON.stringify(s)).join(',')}]`,
};

/**
 * Codex: `notify` only (it gets the turn's end as its last argument). Hooks given with `-c` are not
 * passed: Codex 0.171 runs them only once a person trusted them, a job's hook command (it names the
 * job) is new at every job, and in the TUI they stop the start at a "Hooks need review" screen (and a
 * folder-trust screen before it). `started` and failures come from the wrapper instead.
 */
function codexConfig(ctx: PresetContext): string[] {
  // Codex appends the JSON as the last argument: the value of `--payload`.
  return ['-c', `notify=${toml.array(hookCommand(ctx, 'codex-notify', ['--payload']))}`];
}

/**
 * An agent with no hooks (aider, a shell command) is wrapped: `started` before it, and after it
 * `completed` or `error` by its exit code, unless it published its own outcome first.
 */
function wrapped(ctx: PresetContext, agent: string): string {
  return [
    `${words(hookCommand(ctx, 'wrapper', ['--on', 'start']))} || exit 1`,
    agent,
    'rc=$?',
    `${words(hookCommand(ctx, 'wrapper', ['--on', 'exit', '--exit-code']))} "$rc"`,
    'exit "$rc"',
  ].join('\n');
}

/** The prompt as one argument, read from its file when the command runs (it is too long to inline). */
const promptArgument = (paths: LaunchPaths) => `"$(cat ${shellQuote(paths.promptFile)})"`;

export function agentLaunch(name: AgentName, ctx: PresetContext): AgentLaunch {
  const { mode, paths } = ctx;
  const pane = mode === 'pane';
  const prompt = { stdinFile: paths.promptFile };
  switch (name) {
    case 'claude': {
      const files = [
        { path: paths.claudeSettingsFile, content: claudeSettings(ctx) },
        { path: paths.mcpConfigFile, content: claudeMcpConfig(ctx) },
      ];
      // In a pane the prompt is Claude's first argument, not typed: typed in before its input is
      // ready (2.1.332, ~1 s), the prompt's lines were each sent as a prompt, or the Enter after a
      // paste was taken as part of it and nothing was sent (test/agents-real/panes.test.ts).
      if (pane) return { command: `${words(['claude', '--settings', paths.claudeSettingsFile])} ${promptArgument(paths)}`, files };
      const argv = [
        'claude',
        '-p',
        '--settings',
        paths.claudeSettingsFile,
        '--mcp-config',
        paths.mcpConfigFile,
        '--permission-prompt-tool',
        PERMISSION_PROMPT_TOOL,
      ];
      return { command: words(argv), ...prompt, files };
    }
    case 'codex':
      // In a pane: wrapped too, the prompt its first argument. Typed in, Codex 0.171's TUI dropped a
      // pasted prompt whose Enter came with the paste (seen in tmux), as Claude's did.
      if (pane) return { command: wrapped(ctx, `${words(['codex', ...codexConfig(ctx)])} ${promptArgument(paths)}`), files: [] };
      // `-`: the prompt from stdin (codex-rs/exec/src/cli.rs). Wrapped: there are no hooks (above),
      // and the default read-only sandbox keeps the agent's own `mam-publish` from writing the
      // registry (EROFS); `started` comes from the wrapper, the end from `notify` or, on a failure,
      // the exit code.
      return { command: wrapped(ctx, words(['codex', 'exec', ...codexConfig(ctx), '-'])), ...prompt, files: [] };
    case 'gemini':
      // In a pane: `-i` runs the prompt, then stays interactive (a person may approve its tools there).
      if (pane) return { command: wrapped(ctx, `gemini -i ${promptArgument(paths)}`), files: [] };
      // Wrapped: headless Gemini (0.61) offers the model no tool that needs an approval (no
      // `run_shell_command`), so the agent cannot run the preamble's commands; MAM writes none of
      // Gemini's settings files, so no hook of its own reports either.
      return { command: wrapped(ctx, 'gemini'), ...prompt, files: [] };
    case 'aider':
      if (pane) return { command: wrapped(ctx, 'aider'), terminalPrompt: ctx.prompt, files: [] };
      return {
        command: wrapped(ctx, words(['aider', '--no-check-update', '--no-show-release-notes', '--no-pretty', '--message-file', paths.promptFile])),
        files: [],
      };
    case 'shell':
      // The brief is the command itself; the job's variables are in its environment.
      return { command: wrapped(ctx, words(['sh', '-c', ctx.record.brief])), files: [] };
  }
}
