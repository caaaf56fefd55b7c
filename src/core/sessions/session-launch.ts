import path from 'node:path';
import { binPath, shellQuote } from '../bin-path.ts';
import type { MamConfig } from '../config/config.ts';
import { reportingEnvironment } from '../agents/agent-launch.ts';
import type { Registry } from '../registry/registry.ts';
import type { SessionAgent } from './session-record.ts';

/**
 * What runs in a session's pane, and how its agent reports. Pure (argv and file contents), like
 * src/core/agents/presets.ts: the hooks name the session, not a job, because one agent process takes
 * many jobs; `mam hook --session N` finds the job the session holds.
 */

const words = (argv: readonly string[]) => argv.map(shellQuote).join(' ');

/** The words that run `mam` from a hook: this node and this package's bin, whatever PATH the agent has. */
export const mamWords = (): string[] => [process.execPath, binPath('mam')];

/** `mam hook … --session N --generation G`: a hook of an earlier launch (a stopped agent) is ignored. */
export function sessionHookCommand(mam: readonly string[], from: string, name: string, generation: number, extra: readonly string[] = []): string[] {
  return [...mam, 'hook', '--from', from, '--session', name, '--generation', String(generation), ...extra];
}

/**
 * Claude Code's settings for a session: SessionStart (its session id, and it is ready), UserPromptSubmit
 * (the job's `started`), Notification (a permission prompt; `idle_prompt`: it waits for input), Stop
 * (the end of the turn: the job's `completed`, and the session idle), StopFailure (`error`, idle).
 */
export function claudeSessionSettings(mam: readonly string[], name: string, generation: number): string {
  const handler = { type: 'command', command: words(sessionHookCommand(mam, 'claude', name, generation)), timeout: 30 };
  const on = (matcher?: string) => [{ ...(matcher === undefined ? {} : { matcher }), hooks: [handler] }];
  const hooks = {
    SessionStart: on(),
    UserPromptSubmit: on(),
    Notification: on('permission_prompt|idle_prompt'),
    Stop: on(),
    StopFailure: on(),
  };
  return `${JSON.stringify({ hooks }, null, 2)}\n`;
}

/**
 * Codex: `notify` only, the end of each turn (its payload's `thread-id` is the conversation's id).
 * No `-c hooks.*`: Codex 0.171 runs such hooks only once a person trusted them, and in the TUI they
 * stop the start at a "Hooks need review" screen (docs/agent-cli-facts.md §7.4), so SessionStart and
 * UserPromptSubmit never came. How the session copes without them: CODEX_START_DELAY_MS.
 */
function codexSessionConfig(mam: readonly string[], name: string, generation: number): string[] {
  const notify = `notify=[${sessionHookCommand(mam, 'codex-notify', name, generation, ['--payload'])
    .map((s) => JSON.stringify(s))
    .join(',')}]`;
  return ['-c', notify];
}

/**
 * No hook says when Codex's TUI takes input, and a prompt pasted as it starts was lost (0.171 in
 * tmux: pasted at once, no request reached the model; from 0.1 s on it ran). So a Codex session is
 * idle this long after its process started (`create`/`resume` wait for it), a bounded margin over
 * what was measured, and the first job is never typed before.
 */
export const CODEX_START_DELAY_MS = 3_000;

export interface SessionLaunchInput {
  agent: SessionAgent;
  name: string;
  generation: number;
  /** The session's log folder: Claude's settings file goes there. */
  privateDir: string;
  /** On resume: the agent's own session id from its SessionStart hook, or null to take its latest. */
  resume?: { agentSessionId: string | null } | undefined;
  mam?: readonly string[] | undefined;
}

export interface SessionLaunch {
  /** For `sh -c` in the pane; `exec`, so the pane's first process is the agent itself. */
  command: string;
  files: { path: string; content: string }[];
  /**
   * null: a hook says when the agent is ready (Claude's SessionStart). A number: no hook does, and
   * the session is idle that long after the agent's process started (0: at once; a shell, Gemini).
   */
  startDelayMs: number | null;
}

export function claudeSettingsFile(privateDir: string): string {
  return path.join(privateDir, 'claude-settings.json');
}

/**
 * The launch of a session's agent: fresh, or resumed with the CLI's own resume (Claude Code
 * `--resume <id>`, else `--continue`; Codex `resume <id>`, else `resume --last`; Gemini CLI
 * `--resume <id>`, else `--resume latest`). A shell has no conversation: resuming starts a new one.
 */
export function sessionLaunch(input: SessionLaunchInput): SessionLaunch {
  const mam = input.mam ?? mamWords();
  const { name, generation, resume } = input;
  const id = resume?.agentSessionId ?? null;
  switch (input.agent) {
    case 'claude': {
      const settings = claudeSettingsFile(input.privateDir);
      const resumeArgs = resume === undefined ? [] : id === null ? ['--continue'] : ['--resume', id];
      return {
        command: `exec ${words(['claude', '--settings', settings, ...resumeArgs])}`,
        files: [{ path: settings, content: claudeSessionSettings(mam, name, generation) }],
        startDelayMs: null,
      };
    }
    case 'codex': {
      const resumeArgs = resume === undefined ? [] : id === null ? ['resume', '--last'] : ['resume', id];
      return {
        command: `exec ${words(['codex', ...resumeArgs, ...codexSessionConfig(mam, name, generation)])}`,
        files: [],
        startDelayMs: CODEX_START_DELAY_MS,
      };
    }
    case 'gemini': {
      // MAM writes no Gemini settings (its hooks live in settings files it does not touch): the
      // session is idle again when each job ends (see docs/panes.md).
      const resumeArgs = resume === undefined ? [] : ['--resume', id ?? 'latest'];
      return { command: `exec ${words(['gemini', ...resumeArgs])}`, files: [], startDelayMs: 0 };
    }
    case 'shell':
      // An interactive shell reading its terminal: each job is one line typed into it (deliverJob).
      return { command: 'exec /bin/sh -i', files: [], startDelayMs: 0 };
  }
}

/** The variables every session's agent gets: where the registry is and which broker; no job (jobs come and go). */
export function sessionEnvironment(config: MamConfig, registry: Registry, name: string): Record<string, string> {
  return { ...reportingEnvironment(config, registry), MAM_SESSION: name };
}

/**
 * A shell session's job: a script in the job's audit folder (0600) that the shell runs as one typed
 * line, so the job's variables (its dispatch token among them) are never on the screen. It is
 * wrapped like the `shell` preset: `started`, the brief as `sh -c`, then the outcome by exit code —
 * and that last hook also tells the session its job is over (the shell is idle again), whether or
 * not the job's own hooks were accepted.
 */
export function shellJobScript(
  mam: readonly string[],
  session: { name: string; generation: number },
  job: { jobId: string; attemptId: number; dispatchToken: string; brief: string },
  env: Record<string, string>,
): string {
  const fence = ['--job', job.jobId, '--attempt-id', String(job.attemptId), '--expect-dispatch-token', job.dispatchToken];
  const exports = Object.entries(env).map(([k, v]) => `export ${k}=${shellQuote(v)}`);
  return [
    '#!/bin/sh',
    ...exports,
    `if ${words([...mam, 'hook', '--from', 'wrapper', ...fence, '--on', 'start'])}; then`,
    `  ${words(['sh', '-c', job.brief])}`,
    '  rc=$?',
    'else',
    '  rc=1',
    'fi',
    `${words(sessionHookCommand(mam, 'wrapper', session.name, session.generation, [...fence, '--on', 'exit', '--exit-code']))} "$rc"`,
    '',
  ].join('\n');
}
