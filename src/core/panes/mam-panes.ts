import { JOB_ID_PATTERN } from '../vocabulary.ts';
import { MamError } from '../errors.ts';
import { JOB_OPTION, type TmuxServer, attachCommandFor, isNoServer, runTmux, signalName } from './tmux-client.ts';

/** One pane MAM started, as tmux reports it (its state only: MAM never reads what a pane shows). */
export interface MamPane {
  session: string;
  jobId: string;
  /** pid of the pane's first process (the agent's process group). */
  pid: number;
  /** The agent has ended; the pane stays until its job is closed (`remain-on-exit`). */
  dead: boolean;
  exitStatus: number | null;
  exitSignal: NodeJS.Signals | null;
  /** When the session was created (ISO 8601). */
  created: string;
  /** The exact line a person types to attach. */
  attach: string;
}

const FIELDS = ['#{pane_id}', `#{${JOB_OPTION}}`, '#{@mam_pane}', '#{pane_pid}', '#{pane_dead}', '#{pane_dead_status}', '#{pane_dead_signal}'];
const TAIL = ['#{session_created}', '#{socket_path}', '#{session_name}'];

/**
 * Every pane MAM started on this user's tmux server, oldest first. A session is MAM's by its
 * `@mam_job` option, and its agent's pane is the one `@mam_pane` names, so a pane a person split
 * off beside it is not taken for the agent. No server running: an empty list.
 */
export async function listMamPanes(server: TmuxServer = {}): Promise<MamPane[]> {
  const r = await runTmux(['list-panes', '-a', '-F', [...FIELDS, ...TAIL].join('\t')], server);
  if (r.code !== 0) {
    if (isNoServer(r.stderr)) return [];
    throw new MamError(`tmux list-panes: ${r.stderr.trim().split('\n')[0]}`);
  }
  const panes: MamPane[] = [];
  for (const line of r.stdout.split('\n')) {
    const cells = line.split('\t');
    if (cells.length < FIELDS.length + TAIL.length) continue;
    const [paneId, jobId = '', markedPane, pid, dead, status, signal, created, socketPath = ''] = cells;
    // The session name comes last and is re-joined: only a person's own session could hold a tab.
    const session = cells.slice(FIELDS.length + TAIL.length - 1).join('\t');
    if (!JOB_ID_PATTERN.test(jobId) || paneId !== markedPane) continue;
    const exitSignal = signalName(signal);
    panes.push({
      session,
      jobId,
      pid: Number(pid),
      dead: dead === '1',
      exitStatus: status && !exitSignal ? Number(status) : null,
      exitSignal,
      created: new Date(Number(created) * 1000).toISOString(),
      attach: attachCommandFor(session, socketPath, server.env),
    });
  }
  return panes.sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.session < b.session ? -1 : 1));
}

/**
 * A throwaway pane (`--pane tmux`) is closed with its job by the delegate that started it. One whose
 * delegate died first (SIGKILL) outlives its job: a pane whose job has its outcome and whose agent
 * has ended is closed here, by whoever lists the panes (`mam sessions`). A pane whose agent still
 * runs is left to a person, even when its job is over: MAM does not kill a live process on a listing.
 * Returns the panes that remain.
 */
export async function closeFinishedPanes(panes: MamPane[], jobIsOver: (jobId: string) => boolean, server: TmuxServer = {}): Promise<MamPane[]> {
  const kept: MamPane[] = [];
  for (const pane of panes) {
    if (pane.dead && jobIsOver(pane.jobId)) await runTmux(['kill-session', '-t', `=${pane.session}`], server).catch(() => undefined);
    else kept.push(pane);
  }
  return kept;
}
