import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { MamError } from '../errors.ts';
import { type TmuxServer, attachCommandFor, exactTarget, isNoSession, runTmux, tmux } from '../panes/tmux-client.ts';
import { PANE_WRAPPER, type PaneState, paneState, pasteIntoPane, processRuns, writeEnvFile } from '../panes/tmux-pane.ts';
import { ensureOwnDir } from '../registry/record-store.ts';

/**
 * The tmux side of a named session: a detached tmux session `mam-session-<name>` whose one pane runs
 * the agent. Unlike a job's throwaway pane (TmuxPane), it outlives the command that started it, so
 * everything here works from what the session record keeps: the tmux session, the pane id, the pid.
 * As for every pane, MAM reads its state from tmux (alive, dead, gone), never what it shows.
 */
export const tmuxSessionName = (name: string): string => `mam-session-${name}`;

/** The tmux session option that marks a session as a named MAM session (`mam sessions` lists `@mam_job` ones only). */
export const SESSION_OPTION = '@mam_session';

export interface SessionPane {
  tmuxSession: string;
  paneId: string;
  pid: number;
  socketPath: string;
}

export interface SessionPaneStart {
  name: string;
  command: string;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The session's log folder: the environment file goes there (deleted by the pane before the agent starts). */
  privateDir: string;
  server?: TmuxServer | undefined;
}

/** A live tmux session of that name exists already (not MAM's to replace). */
export class SessionPaneExists extends MamError {
  constructor(readonly tmuxSession: string) {
    super(`tmux session ${tmuxSession} already exists and its agent is still running (or: tmux kill-session -t ${tmuxSession})`);
  }
}

/**
 * Starts the pane (as TmuxPane does: the agent gets exactly `env`, handed over in a file the pane
 * deletes before the agent starts, so no token is in an argv or in tmux's environment). A dead
 * session of the same name (an earlier launch whose agent ended) is replaced.
 */
export async function startSessionPane(opts: SessionPaneStart): Promise<SessionPane> {
  const server = opts.server ?? {};
  const session = tmuxSessionName(opts.name);
  const existing = await runTmux(['list-panes', '-s', '-t', `=${session}`, '-F', '#{pane_dead}'], server);
  if (existing.code === 0) {
    if (existing.stdout.split('\n').some((line) => line === '0')) throw new SessionPaneExists(session);
    await runTmux(['kill-session', '-t', `=${session}`], server);
  } else if (!isNoSession(existing.stderr)) {
    throw new MamError(`tmux list-panes: ${existing.stderr.trim().split('\n')[0]}`);
  }
  ensureOwnDir(opts.privateDir);
  const envDir = path.join(opts.privateDir, 'pane-env');
  ensureOwnDir(envDir);
  const envFile = writeEnvFile(envDir, opts.env);
  try {
    const out = await tmux(
      [
        ...['new-session', '-d', '-s', session, '-n', opts.name, '-c', opts.cwd],
        ...['-P', '-F', '#{pane_id}\t#{pane_pid}\t#{socket_path}', '--', '/bin/sh', '-c', PANE_WRAPPER, envFile, opts.command],
        ...[';', 'set-option', '-w', '-t', exactTarget(session), 'remain-on-exit', 'on'],
        ...[';', 'set-option', '-t', exactTarget(session), SESSION_OPTION, opts.name],
      ],
      server,
    );
    const [paneId = '', pid = '', socketPath = ''] = out.trim().split('\t');
    if (!/^%\d+$/.test(paneId) || !/^\d+$/.test(pid)) throw new MamError(`tmux new-session: unexpected answer ${JSON.stringify(out.trim())}`);
    return { tmuxSession: session, paneId, pid: Number(pid), socketPath };
  } catch (err) {
    rmSync(envFile, { force: true });
    throw err;
  }
}

/** The pane handed its environment file over (the wrapper deletes it as it starts), or ended. Bounded. */
export async function envHandedOver(privateDir: string, ms = 5_000): Promise<boolean> {
  const file = path.join(privateDir, 'pane-env', 'env');
  const deadline = Date.now() + ms;
  while (existsSync(file)) {
    if (Date.now() > deadline) {
      rmSync(file, { force: true });
      return false;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** What became of a session's agent: alive, ended (with its status), or its pane gone. */
export type SessionPaneHealth = { alive: true } | { alive: false; why: string };

/**
 * Whether the agent in the pane still runs. The pane's first process is the agent (the launch
 * `exec`s it), so a pid that ended is an ended agent even before tmux marks the pane dead.
 */
export async function sessionPaneHealth(tmuxSession: string, paneId: string, pid: number | null, server: TmuxServer = {}): Promise<SessionPaneHealth> {
  let state: PaneState | 'gone' = await paneState(tmuxSession, paneId, server);
  // An agent that just ended: tmux may not have marked its pane dead yet, or (tmux 3.3, see
  // TmuxPane.check) marked it dead without the exit status until another child of the server exits.
  // A few more looks, a run-shell to make the server reap, so the status goes into the record.
  for (
    let look = 0;
    look < 10 && state !== 'gone' && (state.dead ? state.status === null && state.signal === null : pid !== null && !processRuns(pid));
    look++
  ) {
    await runTmux(['run-shell', 'true'], server).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    state = await paneState(tmuxSession, paneId, server);
  }
  if (state === 'gone') return { alive: false, why: `tmux pane ${paneId} of ${tmuxSession} is gone` };
  if (state.dead) {
    const how = state.signal ? `killed by ${state.signal}` : state.status === null ? 'ended' : `exited with code ${state.status}`;
    return { alive: false, why: `its agent ${how}` };
  }
  if (pid !== null && !processRuns(pid)) return { alive: false, why: 'its agent process ended' };
  return { alive: true };
}

/** Types a prompt (or a command line, for a shell) into the session's pane, then Enter. */
export function typeIntoSession(paneId: string, text: string, name: string, server: TmuxServer = {}): Promise<void> {
  return pasteIntoPane(paneId, text, server, `mam-session-${name}`);
}

/** SIGTERM to the agent's process group, SIGKILL after `graceMs`, then the tmux session goes. */
export async function killSessionPane(tmuxSession: string, pid: number | null, server: TmuxServer = {}, graceMs = 5_000): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    if (pid === null) return;
    try {
      process.kill(-pid, sig);
    } catch {
      // The group is gone already.
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pid !== null && processRuns(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  signal('SIGKILL');
  await runTmux(['kill-session', '-t', `=${tmuxSession}`], server).catch(() => undefined);
}

/**
 * The tmux server a session's pane is on: the one whose socket the record names, whatever server the
 * current command would reach by default (it may run inside another tmux, with its own $TMUX). A
 * client given `$TMUX` talks to that socket, as a client run inside that server would.
 */
export function serverOf(record: { tmux_socket?: string | null | undefined }, base: TmuxServer = {}): TmuxServer {
  if (!record.tmux_socket) return base;
  return { env: { ...(base.env ?? process.env), TMUX: `${record.tmux_socket},0,0` } };
}

/** Closes a session whose agent is known to have ended: no signal, whose pid may belong to another process by now. */
export async function closeDeadSessionPane(tmuxSession: string, server: TmuxServer = {}): Promise<void> {
  await runTmux(['kill-session', '-t', `=${tmuxSession}`], server).catch(() => undefined);
}

export function sessionAttachCommand(tmuxSession: string, socketPath: string | null | undefined, server: TmuxServer = {}): string {
  return socketPath ? attachCommandFor(tmuxSession, socketPath, server.env) : `tmux attach -t ${tmuxSession}`;
}
