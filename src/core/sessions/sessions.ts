import { lstatSync, rmSync } from 'node:fs';
import type { MamConfig } from '../config/config.ts';
import { MamError, NoSuchJob } from '../errors.ts';
import { type TmuxServer, TmuxMissing, runTmux } from '../panes/tmux-client.ts';
import { closeJob } from '../publisher/close-state.ts';
import { ensureOwnDir, writePrivateFileSync } from '../registry/record-store.ts';
import type { Registry } from '../registry/registry.ts';
import { isTerminalStatus } from '../vocabulary.ts';
import { codexTrust } from './codex-trust.ts';
import { sessionEnvironment, sessionLaunch } from './session-launch.ts';
import { closeDeadSessionPane, envHandedOver, killSessionPane, serverOf, sessionPaneHealth, startSessionPane } from './session-pane.ts';
import type { SessionAgent, SessionRecord } from './session-record.ts';
import { SessionRefused } from './session-errors.ts';
import { type SessionStore, sessionEvent } from './session-store.ts';

/** Everything a session operation needs: where records live, which broker, which tmux server. */
export interface SessionContext {
  config: MamConfig;
  registry: Registry;
  store: SessionStore;
  /** The command's environment: which tmux server it reaches, and what the agent's environment starts from. */
  server?: TmuxServer | undefined;
  /** Warnings a command prints (a close not told to watchers). */
  warn?: ((message: string) => void) | undefined;
}

/** How long `create` / `resume` wait for the agent to say it is ready (its SessionStart hook). */
export const DEFAULT_READY_TIMEOUT_MS = 30_000;

/** The agent did not come up: its pane ended, or it never said it was ready. */
export class SessionStartFailed extends MamError {}

export interface CreateSessionInput {
  name: string;
  agent: SessionAgent;
  workdir: string;
  readyTimeoutMs?: number | undefined;
}

/**
 * `mam session create`: starts the agent in its pane and waits (bounded) until its hooks say it is
 * ready. Refused over a running session (its agent alive) and over a stopped one (its conversation
 * is kept: resume it, or purge it first); a terminated or archived one is replaced.
 */
export async function createSession(ctx: SessionContext, input: CreateSessionInput): Promise<SessionRecord> {
  await assertTmux(ctx);
  const launched = await ctx.store.withLock(input.name, async () => {
    const old = ctx.store.find(input.name);
    if (old?.state === 'running' && (await isAlive(ctx, old))) throw new SessionRefused(input.name, 'is running (mam session stop it first)');
    if (old?.state === 'stopped')
      throw new SessionRefused(input.name, `is stopped with its conversation kept (mam session resume ${input.name}, or stop it with --purge-conversation)`);
    if (input.agent === 'codex') assertCodexTrusts(ctx, input.name, input.workdir);
    const now = new Date().toISOString();
    const fresh: SessionRecord = {
      name: input.name,
      agent: input.agent,
      state: 'running',
      workdir: input.workdir,
      created_at: now,
      updated_at: now,
      generation: (old?.generation ?? 0) + 1,
      tmux_session: null,
      pane_id: null,
      pane_pid: null,
      agent_session_id: null,
      idle: false,
      current_job: null,
      jobs_done: 0,
      last_event: sessionEvent('created'),
      detail: null,
    };
    return launch(ctx, fresh, undefined);
  });
  return awaitReady(ctx, input.name, launched, input.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);
}

/**
 * `mam session resume`: a stopped session (or one whose pane was found dead) starts again with the
 * agent CLI's own resume and the session id its SessionStart hook gave. A purged one cannot be.
 */
export async function resumeSession(ctx: SessionContext, name: string, readyTimeoutMs = DEFAULT_READY_TIMEOUT_MS): Promise<SessionRecord> {
  await assertTmux(ctx);
  const launched = await ctx.store.withLock(name, async () => {
    const r = ctx.store.read(name);
    if (r.state === 'running' && (await isAlive(ctx, r))) throw new SessionRefused(name, 'is running already');
    if (r.state === 'archived') throw new SessionRefused(name, 'is archived');
    if (r.state === 'terminated' && r.agent_session_id === null && r.agent !== 'shell')
      throw new SessionRefused(name, 'has no conversation to resume (it was purged, or its agent never reported one): mam session create a new one');
    if (r.agent === 'codex') assertCodexTrusts(ctx, name, r.workdir);
    const next: SessionRecord = {
      ...r,
      state: 'running',
      generation: r.generation + 1,
      idle: false,
      current_job: null,
      detail: null,
      last_event: sessionEvent('resumed', r.agent_session_id),
      updated_at: new Date().toISOString(),
    };
    return launch(ctx, next, { agentSessionId: r.agent_session_id });
  });
  return awaitReady(ctx, name, launched, readyTimeoutMs);
}

/** tmux is asked for its version first: a machine without it gets TmuxMissing before anything is written. */
async function assertTmux(ctx: SessionContext): Promise<void> {
  try {
    await runTmux(['-V'], ctx.server ?? {});
  } catch (err) {
    if (err instanceof TmuxMissing) throw new MamError('mam session: tmux is not installed (apt install tmux)');
    throw err;
  }
}

/** What awaitReady needs of a launch: which one, when its agent started, and how it says it is ready. */
interface Launched {
  generation: number;
  startedAt: number;
  startDelayMs: number | null;
}

/** A Codex session only where Codex opens without a folder screen (codex-trust.ts); refused before anything is written. */
function assertCodexTrusts(ctx: SessionContext, name: string, workdir: string): void {
  const trust = codexTrust(workdir, ctx.server?.env ?? process.env);
  if (trust.trusted) return;
  const read = trust.problem === undefined ? '' : ` (${trust.problem})`;
  throw new SessionRefused(
    name,
    `Codex does not trust ${workdir} in ${trust.configFile}${read}, and its folder screen would take the first job: run codex there once and trust it, or add [projects.${JSON.stringify(workdir)}] trust_level = "trusted" to that file`,
  );
}

/** Under the session's lock: writes the launch files, starts the pane, writes the running record. */
async function launch(ctx: SessionContext, record: SessionRecord, resume: { agentSessionId: string | null } | undefined): Promise<Launched> {
  const privateDir = ctx.store.sessionLogDir(record.name);
  const plan = sessionLaunch({ agent: record.agent, name: record.name, generation: record.generation, privateDir, resume });
  let pane: Awaited<ReturnType<typeof startSessionPane>>;
  try {
    // Written before the pane starts: the agent reads them at once.
    ensureOwnDir(privateDir);
    for (const f of plan.files) writePrivateFileSync(f.path, f.content);
    pane = await startSessionPane({
      name: record.name,
      command: plan.command,
      // The agent's environment is the command's (its PATH, its HOME), plus where the registry and broker are.
      env: { ...(ctx.server?.env ?? process.env), ...sessionEnvironment(ctx.config, ctx.registry, record.name) },
      cwd: record.workdir,
      privateDir,
      server: ctx.server,
    });
  } catch (err) {
    await ctx.store.write({ ...record, state: 'terminated', detail: `could not start: ${(err as Error).message}`, last_event: sessionEvent('start_failed') });
    throw err;
  }
  const startedAt = Date.now();
  // A shell reads each typed line when it is ready: typed input waits in the terminal, so it is idle
  // at once (so is Gemini, which nothing reports on). Codex is idle after its start delay (awaitReady).
  await ctx.store.write({
    ...record,
    tmux_session: pane.tmuxSession,
    pane_id: pane.paneId,
    pane_pid: pane.pid,
    tmux_socket: pane.socketPath,
    idle: plan.startDelayMs === 0,
  });
  await envHandedOver(privateDir);
  return { generation: record.generation, startedAt, startDelayMs: plan.startDelayMs };
}

/**
 * Waits until the agent said it is ready (idle), its pane died (terminated, an error), or the time is
 * up (a warning). An agent with a start delay (Codex) is marked idle here once the delay has passed
 * and it still runs: a `create` killed before leaves the session not idle (stop and resume it).
 */
async function awaitReady(ctx: SessionContext, name: string, launched: Launched, timeoutMs: number): Promise<SessionRecord> {
  const delay = launched.startDelayMs;
  // A start delay is waited out whatever the timeout: only this wait marks the session idle.
  const deadline = Math.max(Date.now() + timeoutMs, delay === null ? 0 : launched.startedAt + delay);
  for (;;) {
    let r = await reconcileSession(ctx, ctx.store.read(name));
    if (r.state !== 'running') throw new SessionStartFailed(`session ${name}: the agent did not come up (${r.detail ?? r.state})`);
    if (!r.idle && delay !== null && Date.now() >= launched.startedAt + delay)
      r = await ctx.store.update(name, (s) =>
        s.state === 'running' && s.generation === launched.generation && !s.idle && s.current_job === null
          ? { ...s, idle: true, last_event: sessionEvent('agent_ready', `after its ${delay / 1000} s start delay`) }
          : undefined,
      );
    if (r.idle) return r;
    if (Date.now() >= deadline) {
      ctx.warn?.(
        `session ${name}: the agent has not said it is ready after ${Math.round(timeoutMs / 1000)} s (its SessionStart hook); it may still be starting`,
      );
      return r;
    }
    await new Promise((res) => setTimeout(res, 100));
  }
}

async function isAlive(ctx: SessionContext, r: SessionRecord): Promise<boolean> {
  if (r.tmux_session === null || r.pane_id === null) return false;
  return (await sessionPaneHealth(r.tmux_session, r.pane_id, r.pane_pid, serverOf(r, ctx.server))).alive;
}

/**
 * `mam session stop`: the agent is stopped (SIGTERM to its process group, SIGKILL after 5 s) and its
 * tmux session closed. A job it held is closed `cancelled` (detail `session_stopped`). The state is
 * `stopped` with the agent's session id kept for resume, or with `--purge-conversation`
 * `terminated`: the id forgotten and the transcript its SessionStart hook named deleted.
 */
export async function stopSession(ctx: SessionContext, name: string, purge: boolean): Promise<SessionRecord> {
  let before: SessionRecord | undefined;
  // The record first, under the lock: from here no delegate delivers and no hook changes it. The
  // agent is stopped after the lock is released, because its own hooks (Claude runs them as it
  // exits) wait for that lock, and the agent for them.
  const after = await ctx.store.update(name, (r) => {
    if (r.state === 'archived') throw new SessionRefused(name, 'is archived');
    before = r;
    const stopped = { ...r, idle: false, current_job: null, tmux_session: null, pane_id: null, pane_pid: null };
    if (!purge) {
      if (r.state !== 'running') return undefined;
      return { ...stopped, state: 'stopped', detail: 'stopped', last_event: sessionEvent('stopped') };
    }
    return {
      ...stopped,
      state: 'terminated',
      agent_session_id: null,
      transcript_path: null,
      detail: 'stopped, conversation purged',
      last_event: sessionEvent('purged'),
    };
  });
  const r = before!;
  if (r.state === 'running' && r.tmux_session !== null) {
    // Signals only to an agent still alive: a dead one's pid may be another process's by now.
    if (await isAlive(ctx, r)) await killSessionPane(r.tmux_session, r.pane_pid, serverOf(r, ctx.server));
    else await closeDeadSessionPane(r.tmux_session, serverOf(r, ctx.server));
  }
  if (r.current_job !== null) await closeHeldJob(ctx, r.current_job, 'cancelled', 'session_stopped');
  if (purge && r.transcript_path) removeTranscript(r.transcript_path);
  return after;
}

/** Only a regular file, never through a symbolic link: the path came from a hook payload. */
function removeTranscript(file: string): void {
  try {
    if (lstatSync(file).isFile()) rmSync(file);
  } catch {
    // Gone already.
  }
}

/** Closes a job the session held, unless it has its outcome already. */
async function closeHeldJob(ctx: SessionContext, jobId: string, request: 'cancelled' | 'error', reason: string): Promise<void> {
  try {
    if (isTerminalStatus(ctx.registry.read(jobId).status)) return;
  } catch (err) {
    if (err instanceof NoSuchJob) return;
    throw err;
  }
  const { notice } = await closeJob(ctx.config, ctx.registry, jobId, request, reason);
  if (notice) ctx.warn?.(`job ${jobId}: closed ${request}, watchers not told (${notice.message})`);
}

/**
 * A running session whose pane is gone or whose agent ended becomes `terminated`, with why in
 * `detail`, and the job it held `error` (detail `session_terminated: …`). Run by `mam session list`
 * and `create`/`resume` on what they read, and by a delegate watching a session's job
 * (SessionJobAgent): whoever looks first records it.
 */
export async function reconcileSession(ctx: SessionContext, seen: SessionRecord): Promise<SessionRecord> {
  if (seen.state !== 'running' || seen.tmux_session === null || seen.pane_id === null) return seen;
  const health = await sessionPaneHealth(seen.tmux_session, seen.pane_id, seen.pane_pid, serverOf(seen, ctx.server));
  if (health.alive) return seen;
  return markTerminated(ctx, seen.name, seen.generation, health.why);
}

/** Marks a session's launch `generation` terminated (a later launch is left alone) and errors its held job. */
export async function markTerminated(ctx: SessionContext, name: string, generation: number, why: string): Promise<SessionRecord> {
  return ctx.store.update(name, async (r) => {
    if (r.state !== 'running' || r.generation !== generation) return undefined;
    if (r.current_job !== null) await closeHeldJob(ctx, r.current_job, 'error', `session_terminated: session ${name}: ${why}`);
    // A dead pane stays (remain-on-exit) until someone closes it: the record keeps why, the pane goes.
    if (r.tmux_session !== null) await closeDeadSessionPane(r.tmux_session, serverOf(r, ctx.server));
    return { ...r, state: 'terminated', idle: false, current_job: null, detail: why, last_event: sessionEvent('terminated', why) };
  });
}
