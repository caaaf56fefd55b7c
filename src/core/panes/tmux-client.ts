import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { constants } from 'node:os';
import path from 'node:path';
import { shellQuote } from '../bin-path.ts';
import { MamError } from '../errors.ts';

/**
 * The tmux client as MAM runs it: one `tmux` process per command, on the server a plain `tmux`
 * typed by the same user would reach (so that the attach line MAM prints works as typed). That
 * server is chosen by the environment the client runs with: `$TMUX` when MAM itself runs inside
 * tmux, else `$TMUX_TMPDIR/tmux-<uid>/default`. Tests isolate themselves with their own TMUX_TMPDIR.
 */
export class TmuxMissing extends MamError {
  constructor() {
    super('--pane tmux: tmux is not installed (apt install tmux)');
  }
}

/** A tmux command that failed; its stderr is tmux's own one-line reason. */
export class TmuxFailed extends MamError {
  constructor(
    args: string[],
    readonly stderr: string,
  ) {
    super(`tmux ${args[0] ?? ''}: ${stderr.trim().split('\n')[0] || 'failed'}`);
  }
}

export interface TmuxResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Which server and which tmux binary (through PATH): the environment the client runs with. */
export interface TmuxServer {
  env?: NodeJS.ProcessEnv | undefined;
}

/** Sessions MAM starts are named after their job, so a person can guess the attach target. */
export const sessionName = (jobId: string): string => `mam-${jobId}`;

/**
 * The session user option that marks a session as MAM's and names its job. Listing goes by this,
 * not by the `mam-` prefix, so a person's own session that happens to be called `mam-…` is ignored.
 */
export const JOB_OPTION = '@mam_job';

/**
 * `=name:` is tmux's exact-match target for a session's current window. A bare `mam-ab` would
 * also match `mam-abcd1234` by prefix.
 */
export const exactTarget = (session: string): string => `=${session}:`;

/** Runs one tmux command; resolves with its result whatever the exit code. tmux not on PATH: TmuxMissing. */
export function runTmux(args: string[], server: TmuxServer = {}, input?: string): Promise<TmuxResult> {
  return new Promise((resolve, reject) => {
    // -u: without a UTF-8 locale (LANG unset, as under cron or `env -i`) tmux prints a tab in a
    // format as `_`, and MAM's listings are tab-separated.
    const child = spawn('tmux', ['-u', ...args], { env: server.env ?? process.env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (err: NodeJS.ErrnoException) => reject(err.code === 'ENOENT' ? new TmuxMissing() : err));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** The same, for commands that must work: a non-zero exit is a TmuxFailed. */
export async function tmux(args: string[], server: TmuxServer = {}, input?: string): Promise<string> {
  const r = await runTmux(args, server, input);
  if (r.code !== 0) throw new TmuxFailed(args, r.stderr);
  return r.stdout;
}

/** tmux's answer when there is no server to talk to: not an error for a listing, just nothing. */
export function isNoServer(stderr: string): boolean {
  return /no server running|error connecting to|server exited unexpectedly/i.test(stderr);
}

/** tmux's answer when the target session is gone (killed by a person, or the server restarted). */
export function isNoSession(stderr: string): boolean {
  return isNoServer(stderr) || /can't find (session|window|pane)|no such session/i.test(stderr);
}

/**
 * The socket a plain `tmux` (no $TMUX, no -L/-S) would use with this environment. tmux resolves
 * TMUX_TMPDIR through realpath, so the comparison in attachCommandFor does too.
 */
export function defaultSocketPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.TMUX_TMPDIR || '/tmp';
  let dir = base;
  try {
    dir = realpathSync(base);
  } catch {
    // tmux would fail on it too; keep the name as given.
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  return path.join(dir, `tmux-${uid}`, 'default');
}

/**
 * What a person types to attach. `-S` only when the session is on another server than a plain
 * `tmux` would reach (MAM ran inside another tmux server, or under -L): then the bare form would
 * attach to the wrong server or to none.
 */
export function attachCommandFor(session: string, socketPath: string, env: NodeJS.ProcessEnv = process.env): string {
  const socket = socketPath === defaultSocketPath(env) ? '' : `-S ${shellQuote(socketPath)} `;
  return `tmux ${socket}attach -t ${session}`;
}

/** tmux reports a signal by number. */
export function signalName(num: string | undefined): NodeJS.Signals | null {
  if (!num) return null;
  const n = Number(num);
  const entry = Object.entries(constants.signals).find(([, v]) => v === n);
  return (entry?.[0] as NodeJS.Signals | undefined) ?? null;
}
