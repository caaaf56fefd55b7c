import path from 'node:path';
import { launchPaths, jobEnvironment } from '../agents/agent-launch.ts';
import { agentPrompt } from '../agents/preamble.ts';
import { shellQuote } from '../bin-path.ts';
import type { JobRecord } from '../registry/job-record.ts';
import { ensureOwnDir, writePrivateFileSync } from '../registry/record-store.ts';
import type { AgentExit } from '../remote/agent-process.ts';
import { mamWords, shellJobScript } from './session-launch.ts';
import { serverOf, sessionPaneHealth, typeIntoSession } from './session-pane.ts';
import type { SessionRecord } from './session-record.ts';
import { type SessionContext, markTerminated, reconcileSession } from './sessions.ts';
import { sessionEvent } from './session-store.ts';
import { NoSuchSession, SessionUnavailable } from './session-errors.ts';
import { type SessionHook, applySessionHook } from './session-hooks.ts';

/** How long a delegate waits for a busy session to become idle before it gives the job up (`--wait-idle`). */
export const DEFAULT_WAIT_IDLE_MS = 5_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How often a waiting delegate looks at the session. A look is one unlocked read of a small file,
 * so it can be often: the previous job's last hook frees the session just after its delegate exits.
 */
const IDLE_POLL_MS = 25;

/**
 * The idle handshake: waits (up to `waitMs`) for the session to be idle and hold no job, and takes it
 * for `jobId` in the same locked read-modify-write (idle → busy, current_job = the job). So of two
 * delegates racing for one idle session exactly one gets it; the other waits, and gives up with
 * `session_busy`.
 */
export async function claimIdleSession(
  ctx: SessionContext,
  name: string,
  jobId: string,
  waitMs: number,
  cancelled: () => boolean = () => false,
): Promise<SessionRecord> {
  const deadline = Date.now() + waitMs;
  // A dead pane is found before anything is typed into it.
  await reconcileSession(ctx, ctx.store.read(name));
  for (;;) {
    // A look without the lock first: waiting delegates do not hold up the hooks that free the
    // session. The decision is still taken under the lock, on what it reads there.
    const seen = ctx.store.read(name);
    const looksFree = seen.state !== 'running' || (seen.idle && seen.current_job === null);
    const r = !looksFree
      ? seen
      : await ctx.store.update(name, (s) => {
          if (s.state !== 'running') throw new SessionUnavailable('session_not_running', `session ${name} is ${s.state}${s.detail ? ` (${s.detail})` : ''}`);
          if (!s.idle || s.current_job !== null) return undefined;
          return { ...s, idle: false, current_job: jobId, last_event: sessionEvent('job_delivered', jobId) };
        });
    if (r.current_job === jobId) return r;
    if (cancelled()) throw new SessionUnavailable('session_busy', `job ${jobId} was cancelled while session ${name} was busy`);
    if (Date.now() >= deadline) {
      const holding = r.current_job === null ? 'not idle yet' : `busy with job ${r.current_job}`;
      throw new SessionUnavailable('session_busy', `session ${name} is ${holding} after ${(waitMs / 1000).toFixed(1)} s`);
    }
    await sleep(Math.min(IDLE_POLL_MS, Math.max(5, deadline - Date.now())));
  }
}

/**
 * What is typed into the session for a job: the preamble and the brief for an agent (as a pane
 * agent gets them), or for a shell one line that runs the job's script (session-launch.ts).
 */
export function deliveryText(ctx: SessionContext, session: SessionRecord, record: JobRecord): string {
  const paths = launchPaths(ctx.registry, record.job_id);
  ensureOwnDir(path.dirname(paths.promptFile));
  const prompt = agentPrompt(record);
  writePrivateFileSync(paths.promptFile, prompt);
  if (session.agent !== 'shell') return prompt;
  const script = path.join(path.dirname(paths.promptFile), 'session-job.sh');
  const env = jobEnvironment(ctx.config, ctx.registry, record, paths.promptFile);
  writePrivateFileSync(
    script,
    shellJobScript(mamWords(), session, { jobId: record.job_id, attemptId: record.attempt_id, dispatchToken: record.dispatch_token, brief: record.brief }, env),
  );
  return `sh ${shellQuote(script)}`;
}

/**
 * Codex gives the session no hook when it takes a prompt (its UserPromptSubmit would need trusting,
 * session-launch.ts): the job's `started` is published once its prompt is typed into the idle Codex,
 * as the session's `turn_started`. Its end still comes from Codex (notify).
 */
async function startedByDelivery(ctx: SessionContext, session: SessionRecord, record: JobRecord): Promise<void> {
  const hook: SessionHook = { turn: 'prompt', action: { publish: 'started', detail: `typed into session ${session.name} (Codex)` } };
  const target = { name: session.name, generation: session.generation, jobId: record.job_id };
  await applySessionHook(ctx.config, ctx.registry, ctx.store, target, hook, { attemptId: record.attempt_id, dispatchToken: record.dispatch_token }).catch(
    (err: Error) => ctx.warn?.(`job ${record.job_id}: its started was not published (${err.message})`),
  );
}

/** How often a delegate checks that the session's pane and agent still live. */
const HEALTH_POLL_MS = 500;

/**
 * A job running in a named session, as the delegation sees its agent: `exited` resolves when the
 * session's pane is gone or its agent ended (and the session is marked terminated at once), and
 * `stop()` never stops the agent — the session outlives its jobs. `exitDetail` is what the job is
 * closed with then.
 */
export class SessionJobAgent {
  readonly exited: Promise<AgentExit>;
  exitDetail: string | undefined;
  private resolveExit!: (exit: AgentExit) => void;
  private timer: NodeJS.Timeout | undefined;
  private done = false;
  /** The terminated mark in flight: the delegate's process must not end before it is written. */
  private marking: Promise<void> | undefined;

  constructor(
    private readonly ctx: SessionContext,
    private readonly session: SessionRecord,
    private readonly jobId: string,
    /** Gemini reports no end of turn through hooks MAM set: the job's end frees the session. */
    private readonly freeOnStop: boolean,
  ) {
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
    this.schedule();
  }

  /** Claims the session, types the job in, and watches the session. Throws SessionUnavailable before anything is typed. */
  static async deliver(ctx: SessionContext, name: string, record: JobRecord, waitMs: number, cancelled: () => boolean = () => false): Promise<SessionJobAgent> {
    let session: SessionRecord;
    try {
      session = await claimIdleSession(ctx, name, record.job_id, waitMs, cancelled);
    } catch (err) {
      // Its record removed since the delegate started: as good as not running.
      if (err instanceof NoSuchSession) throw new SessionUnavailable('session_not_running', err.message);
      throw err;
    }
    if (cancelled()) {
      // Cancelled (SIGINT) while it waited: the session is handed back untouched, nothing is typed.
      await ctx.store.update(name, (r) => (r.current_job === record.job_id ? { ...r, idle: true, current_job: null } : undefined));
      throw new SessionUnavailable('session_busy', `job ${record.job_id} was cancelled before delivery`);
    }
    const text = deliveryText(ctx, session, record);
    try {
      await typeIntoSession(session.pane_id!, text, name, serverOf(session, ctx.server));
    } catch (err) {
      // The pane went between the claim and the typing: the session is dead, the job never reached it.
      await markTerminated(ctx, name, session.generation, `typing the job failed: ${(err as Error).message}`);
      throw new SessionUnavailable('session_not_running', `session ${name}: ${(err as Error).message}`);
    }
    if (session.agent === 'codex') await startedByDelivery(ctx, session, record);
    return new SessionJobAgent(ctx, session, record.job_id, session.agent === 'gemini');
  }

  private schedule(): void {
    if (this.done) return;
    this.timer = setTimeout(() => void this.check(), HEALTH_POLL_MS);
  }

  private async check(): Promise<void> {
    if (this.done) return;
    const { tmux_session, pane_id, pane_pid } = this.session;
    const server = serverOf(this.session, this.ctx.server);
    const health = await sessionPaneHealth(tmux_session!, pane_id!, pane_pid, server).catch(() => ({ alive: true }) as const);
    if (this.done) return;
    if (health.alive) return this.schedule();
    this.exitDetail = `session_terminated: session ${this.session.name}: ${health.why}`;
    // The session is marked terminated and its job closed `error` with why, by whoever sees it first.
    this.marking = markTerminated(this.ctx, this.session.name, this.session.generation, health.why).then(
      () => undefined,
      () => undefined,
    );
    await this.marking;
    this.finish({ code: null, signal: 'SIGHUP' });
  }

  private finish(exit: AgentExit): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.timer);
    this.resolveExit(exit);
  }

  /** Stops watching; the agent and its session go on. */
  async stop(): Promise<AgentExit> {
    await this.marking;
    if (!this.done) {
      if (this.freeOnStop)
        await this.ctx.store
          .update(this.session.name, (r) =>
            r.current_job === this.jobId
              ? { ...r, idle: true, current_job: null, jobs_done: r.jobs_done + 1, last_event: sessionEvent('turn_ended', this.jobId) }
              : undefined,
          )
          .catch(() => undefined);
      this.finish({ code: null, signal: null });
    }
    return this.exited;
  }
}
