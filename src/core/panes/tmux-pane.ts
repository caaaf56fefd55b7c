import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MamError } from '../errors.ts';
import { type AgentExit, KILL_GRACE_MS } from '../remote/agent-process.ts';
import { JOB_OPTION, type TmuxServer, attachCommandFor, exactTarget, isNoSession, runTmux, sessionName, signalName, tmux } from './tmux-client.ts';

export { TmuxMissing } from './tmux-client.ts';

export interface TmuxPaneStart {
  jobId: string;
  /** The agent's command line, run by `sh -c` as AgentProcess runs it. */
  command: string;
  /** The agent's whole environment, exactly (as AgentProcess's `env`); nothing of the tmux server's leaks in. */
  env: NodeJS.ProcessEnv;
  /** Default: this process's working folder. */
  cwd?: string | undefined;
  /** Typed into the pane once it runs, then Enter (see typePrompt). */
  prompt?: string | undefined;
  /** Wait this long before typing the prompt, for agents that discard what was typed before they drew their screen. */
  promptDelayMs?: number | undefined;
  /** Which tmux server: the environment the tmux client runs with (default process.env). */
  server?: TmuxServer | undefined;
  /** How often the pane's process is checked for its exit (default 200 ms). */
  pollMs?: number | undefined;
}

/** A live session of this job's name already exists: an agent of this job still runs there. */
export class PaneExists extends MamError {
  constructor(readonly session: string) {
    super(`tmux session ${session} already exists and its agent is still running (attach to it, or: tmux kill-session -t ${session})`);
  }
}

/**
 * The pane's first process: empties the environment tmux gave it (the server's global one, which may
 * be days old and hold another session's variables), keeps the three variables that describe the
 * pane's own terminal, loads the job's environment from a file that it deletes at once, and execs
 * the agent's command. The job's variables (tokens among them) so never appear in any argv, which
 * every local user can read in /proc, nor in tmux's session environment.
 */
export const PANE_WRAPPER =
  'exec /usr/bin/env -i TERM="$TERM" TMUX="$TMUX" TMUX_PANE="$TMUX_PANE" /bin/sh -c \'. "$0" && rm -f -- "$0" && exec /bin/sh -c "$1"\' "$0" "$1"';

/** The pane's terminal describes itself; the caller's TERM would describe another terminal. */
const PANE_OWN_VARIABLES = new Set(['TERM', 'TMUX', 'TMUX_PANE']);
/** Read-only in bash (macOS's /bin/sh): assigning one would abort the wrapper. */
const SHELL_READONLY = new Set(['PPID', 'UID', 'EUID', 'SHELLOPTS', 'BASHOPTS', 'BASH_VERSINFO']);

const DEFAULT_POLL_MS = 200;
/** How often tmux itself is asked while the pid still looks alive. */
const TMUX_CHECK_MS = 2_000;

/**
 * An agent run in a detached tmux session `mam-<job>` (one window, one pane), for people who want
 * to watch it or type into it. Same shape as AgentProcess, so the delegation can use either.
 * Its exit is read from tmux's pane state (`remain-on-exit`, `pane_dead_status`), never from what
 * the pane shows: MAM takes no decision from a pane's content.
 */
export class TmuxPane {
  readonly exited: Promise<AgentExit>;
  readonly session: string;
  private resolveExit!: (exit: AgentExit) => void;
  private done = false;
  private timer: NodeJS.Timeout | undefined;
  private stopping: Promise<AgentExit> | undefined;
  private ticks = 0;

  private constructor(
    readonly jobId: string,
    private readonly paneId: string,
    private readonly panePid: number,
    private readonly socketPath: string,
    private readonly server: TmuxServer,
    private readonly envDir: string,
    private readonly pollMs: number,
  ) {
    this.session = sessionName(jobId);
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
    this.schedule();
  }

  /**
   * Starts the session; resolves once the agent's process runs (and its prompt, if any, is typed).
   * Rejects with TmuxMissing without tmux, PaneExists when this job's agent already runs in one.
   */
  static async start(opts: TmuxPaneStart): Promise<TmuxPane> {
    const server = opts.server ?? {};
    const session = sessionName(opts.jobId);
    await clearDeadSession(session, server);
    const envDir = mkdtempSync(path.join(tmpdir(), 'mam-pane-'));
    let pane: TmuxPane;
    try {
      const envFile = writeEnvFile(envDir, opts.env);
      // One command list, run by the server in one go: remain-on-exit is on before the agent can
      // exit, so even an agent that fails at once leaves its exit status to read.
      const out = await tmux(
        [
          ...['new-session', '-d', '-s', session, '-n', opts.jobId, '-c', opts.cwd ?? process.cwd()],
          ...['-P', '-F', '#{pane_id}\t#{pane_pid}\t#{socket_path}', '--', '/bin/sh', '-c', PANE_WRAPPER, envFile, opts.command],
          ...[';', 'set-option', '-w', '-t', exactTarget(session), 'remain-on-exit', 'on'],
          ...[';', 'set-option', '-t', exactTarget(session), JOB_OPTION, opts.jobId],
          ...[';', 'set-option', '-F', '-t', exactTarget(session), '@mam_pane', '#{pane_id}'],
        ],
        server,
      );
      const [paneId = '', pid = '', socketPath = ''] = out.trim().split('\t');
      if (!/^%\d+$/.test(paneId) || !/^\d+$/.test(pid)) throw new MamError(`tmux new-session: unexpected answer ${JSON.stringify(out.trim())}`);
      pane = new TmuxPane(opts.jobId, paneId, Number(pid), socketPath, server, envDir, opts.pollMs ?? DEFAULT_POLL_MS);
    } catch (err) {
      rmSync(envDir, { recursive: true, force: true });
      throw err;
    }
    if (opts.prompt !== undefined) {
      try {
        if (opts.promptDelayMs) await new Promise((r) => setTimeout(r, opts.promptDelayMs));
        await pane.typePrompt(opts.prompt);
      } catch (err) {
        // An agent that never got its brief must not run on unwatched.
        await pane.stop();
        throw err;
      }
    }
    return pane;
  }

  /** pid of the pane's first process: the leader of the process group the agent runs in. */
  get pid(): number {
    return this.panePid;
  }

  /** The exact line a person types to watch the agent (with `-S` when it is not the default server). */
  attachCommand(): string {
    return attachCommandFor(this.session, this.socketPath, this.server.env);
  }

  /**
   * Types `text` into the pane, then Enter. It goes through a tmux buffer (stdin → load-buffer →
   * paste-buffer), so no shell and no tmux parser ever reads it: quotes, `$VAR` and `;` arrive as
   * typed. Lines are pasted as one bracketed paste when the agent asked for it (TUI agents do), so a
   * line break does not submit half a prompt; a line-reading agent gets them as lines. Trailing
   * line breaks are dropped: Enter ends the prompt. Text typed before the agent reads waits in the
   * terminal's input queue. A pane whose agent has ended gets nothing (exited says how it ended).
   */
  async typePrompt(text: string): Promise<void> {
    await pasteIntoPane(this.paneId, text, this.server, `mam-prompt-${this.jobId}`);
  }

  /**
   * SIGTERM to the pane's process group, SIGKILL after the grace period, then the session goes:
   * the pane is closed when the job closes. Resolves with the agent's exit.
   */
  stop(graceMs = KILL_GRACE_MS): Promise<AgentExit> {
    this.stopping ??= this.close(graceMs);
    return this.stopping;
  }

  private async close(graceMs: number): Promise<AgentExit> {
    if (!this.done) {
      this.signal('SIGTERM');
      const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    // Whatever the agent left behind in its group goes too, then the window.
    this.signal('SIGKILL');
    await runTmux(['kill-session', '-t', `=${this.session}`], this.server).catch(() => undefined);
    return this.exited;
  }

  private signal(sig: NodeJS.Signals): void {
    try {
      process.kill(-this.panePid, sig);
    } catch {
      // The group is already gone.
    }
  }

  // A timeout chain, not an interval: a slow tmux answer never overlaps the next check.
  private schedule(): void {
    if (this.done) return;
    this.timer = setTimeout(() => void this.check(), this.pollMs);
  }

  /**
   * A running pid costs no process to check; tmux is asked once it has ended for the status it
   * recorded, and every few seconds anyway (where no /proc tells a zombie from a live process).
   */
  private async check(): Promise<void> {
    if (this.done) return;
    const runs = processRuns(this.panePid);
    if (runs && ++this.ticks % Math.max(1, Math.round(TMUX_CHECK_MS / this.pollMs)) !== 0) return this.schedule();
    const state = await paneState(this.session, this.paneId, this.server);
    if (this.done) return;
    if (state === 'gone') {
      // The pane went with its session (a person killed it, or the server): tmux hung up on the
      // agent, and the exit status went with the pane. SIGHUP is the honest account of that.
      if (!runs) return this.finish({ code: null, signal: 'SIGHUP' });
    } else if (state.dead && (state.status !== null || state.signal !== null)) {
      return this.finish({ code: state.signal ? null : state.status, signal: state.signal });
    } else if (state.dead) {
      // tmux 3.3 at times misses the SIGCHLD of an agent that exits at once: the pane is dead, its
      // process an unreaped zombie, its status empty. Any other child of the server exiting makes
      // tmux reap them all, and the status is there at the next check.
      await runTmux(['run-shell', 'true'], this.server).catch(() => undefined);
    }
    this.schedule();
  }

  private finish(exit: AgentExit): void {
    this.done = true;
    clearTimeout(this.timer);
    rmSync(this.envDir, { recursive: true, force: true });
    this.resolveExit(exit);
  }
}

/**
 * Types `text` into a pane, then Enter (see TmuxPane.typePrompt): through a tmux buffer, bracketed
 * when the agent asked for it, and never into a dead pane. Also used for a named session's pane,
 * which outlives the process that started it (src/core/sessions/).
 */
export async function pasteIntoPane(paneId: string, text: string, server: TmuxServer, buffer: string): Promise<void> {
  const body = text.replace(/[\r\n]+$/, '');
  const enter = `send-keys -t ${paneId} Enter`;
  if (body === '') {
    await tmux(['send-keys', '-t', paneId, 'Enter'], server);
    return;
  }
  // tmux 3.3 crashes, taking every session of the server with it, when paste-buffer targets a
  // dead pane. The check and the paste run in one pass of the server's command queue, where the
  // pane cannot die between them; a dead pane's buffer is deleted instead.
  const paste = `paste-buffer -d -p -b ${buffer} -t ${paneId} ; ${enter}`;
  await tmux(['load-buffer', '-b', buffer, '-', ';', 'if-shell', '-F', '-t', paneId, '#{?pane_dead,,1}', paste, `delete-buffer -b ${buffer}`], server, body);
}

/** A zombie answers kill(pid, 0) too; on Linux, /proc says that it has ended. */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    // No /proc (macOS): the periodic tmux check finds the dead pane.
    return process.platform !== 'linux';
  }
}

export interface PaneState {
  dead: boolean;
  status: number | null;
  signal: NodeJS.Signals | null;
}

export async function paneState(session: string, paneId: string, server: TmuxServer): Promise<PaneState | 'gone'> {
  const r = await runTmux(['list-panes', '-s', '-t', `=${session}`, '-F', '#{pane_id}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}'], server).catch(
    () => undefined,
  );
  // No answer about the session (no server, no session, no tmux) is a gone pane; check() still
  // waits for the process itself.
  if (r?.code !== 0) return 'gone';
  const row = r.stdout.split('\n').find((line) => line.startsWith(`${paneId}\t`));
  if (!row) return 'gone';
  const [, dead, status, signal] = row.split('\t');
  return { dead: dead === '1', status: status ? Number(status) : null, signal: signalName(signal) };
}

/**
 * A session of this job's name from an earlier attempt whose agent has ended (MAM was killed
 * before it could close it) is removed; one whose agent still runs is not MAM's to kill.
 */
async function clearDeadSession(session: string, server: TmuxServer): Promise<void> {
  const r = await runTmux(['list-panes', '-s', '-t', `=${session}`, '-F', '#{pane_dead}'], server);
  if (r.code !== 0) {
    if (isNoSession(r.stderr)) return;
    throw new MamError(`tmux list-panes: ${r.stderr.trim().split('\n')[0]}`);
  }
  if (r.stdout.split('\n').some((line) => line === '0')) throw new PaneExists(session);
  await runTmux(['kill-session', '-t', `=${session}`], server);
}

/**
 * The job's environment as `export NAME='value'` lines, in a file only this user can read. Names a
 * shell cannot assign (`a.b`, `x-y`) cannot be passed this way and are left out; a shell agent
 * could not read them either.
 */
export function writeEnvFile(dir: string, env: NodeJS.ProcessEnv): string {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || PANE_OWN_VARIABLES.has(name) || SHELL_READONLY.has(name)) continue;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) continue;
    lines.push(`export ${name}='${value.replace(/'/g, `'\\''`)}'`);
  }
  const file = path.join(dir, 'env');
  writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return file;
}
