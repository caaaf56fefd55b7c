import * as z from 'zod/mini';
import { AGENT_NAMES } from '../../core/agents/presets.ts';
import type { DelegationStatus, SessionDeliverer } from '../../core/delegate/delegation.ts';
import { UsageError } from '../../core/errors.ts';
import { resolveJobLimits } from '../../core/registry/job-limits.ts';
import { sessionNameSchema } from '../../core/sessions/session-record.ts';
import { type CommandContext, warnIfPublicSandbox } from '../context.ts';
import { limitFlag } from '../flags.ts';
import { watchExit } from '../exit-codes.ts';
import { askedLimits, jobFlags, jobOptionsShape, readBrief } from '../job-options.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';
import { commandLogger } from '../command-logger.ts';

const delegateOptions = z.object({
  ...jobOptionsShape,
  exec: z.optional(z.string().check(z.minLength(1))),
  agent: z.optional(z.enum(AGENT_NAMES)),
  pane: z.optional(z.enum(['tmux'])),
  remote: z.optional(z.string().check(z.minLength(1))),
  session: z.optional(sessionNameSchema),
  waitIdle: z.optional(limitFlag),
  agentSession: z.optional(z.string().check(z.minLength(1))),
  json: z.optional(z.boolean()),
  embeddedBroker: z._default(z.boolean(), true),
  registry: z.optional(z.string()),
});

/** The live line for a person at a terminal: job, status, last event, time since it. */
function statusLine(s: DelegationStatus, now: number): string {
  const since = s.lastEventAt === null ? '-' : `${Math.round((now - s.lastEventAt) / 1000)}s ago`;
  return `[${s.jobId}] ${s.status} · last ${s.lastEvent ?? 'none'} ${since}`;
}

/** The highlighted line a person sees when the agent waits for permission (reverse video, bold). */
export function permissionLine(jobId: string, seq: number, detail: string): string {
  const answer = `mam approve --job ${jobId} --seq ${seq}   |   mam deny --job ${jobId} --seq ${seq} --reason "…"`;
  return `\x1b[1;7m PERMISSION \x1b[0m \x1b[1m${detail}\x1b[0m\n            answer: ${answer}`;
}

/** `--session N`: the job goes to that session's agent once it is idle (src/core/sessions/session-delivery.ts). */
async function sessionDeliverer(ctx: CommandContext, name: string, waitIdleSec: number | undefined): Promise<SessionDeliverer> {
  const [{ SessionStore }, { SessionJobAgent, DEFAULT_WAIT_IDLE_MS }] = await Promise.all([
    import('../../core/sessions/session-store.ts'),
    import('../../core/sessions/session-delivery.ts'),
  ]);
  const store = new SessionStore(ctx.registry());
  store.read(name);
  const sessions = { config: ctx.config(), registry: ctx.registry(), store, server: { env: ctx.env }, warn: ctx.warn };
  const waitMs = waitIdleSec === undefined ? DEFAULT_WAIT_IDLE_MS : waitIdleSec * 1000;
  return async (record, cancelled) => {
    const agent = await SessionJobAgent.deliver(sessions, name, record, waitMs, cancelled);
    ctx.io.err.write(`job ${record.job_id} handed to session ${name}\n`);
    return agent;
  };
}

export const delegateCommand = defineCommand({
  name: 'delegate',
  summary:
    'register a job, launch its agent (or hand it to a session), watch it to the end (0 completed, 1 error/blocked/cancelled, 2 timeout, 3 broker, 5 session busy)',
  examples: [
    ['give Claude Code a task and wait for its outcome (exit 0: completed)', '--agent claude --brief "Make the flaky login test deterministic"'],
    ['Codex in a tmux pane you can attach to, the brief from a file', '--agent codex --brief-file task.md --pane tmux'],
    ['hand the next job to a long-lived session, once its agent is idle (exit 5: busy)', '--session reviewer --brief "Review PR 12"'],
  ],
  configure: (cmd) =>
    jobFlags(registryOption(cmd))
      .option('--agent <name>', `run a known agent CLI locally: ${AGENT_NAMES.join(' | ')} (hooks and instructions set up for it)`)
      .option('--exec <cmd>', 'run any other agent command locally through sh -c (its prompt on stdin)')
      .option('--pane <kind>', 'run the local agent in a terminal pane you can attach to: tmux')
      .option('--remote <session>', 'dispatch the job to a mam-remote runner of this session')
      .option('--session <name>', 'hand the job to a running named session (mam session create); exit 5 when it stays busy')
      .option('--wait-idle <s>', 'with --session: how long to wait for the session to be idle (default 5; 0: no wait)')
      .option('--agent-session <name>', 'the agent session the job is for')
      .option('--json', 'JSON lines even on a terminal')
      .option('--no-embedded-broker', 'never start the embedded broker when none answers'),
  parse(raw) {
    const opts = parseOptions(delegateOptions, raw);
    const chosen = [opts.agent, opts.exec, opts.remote, opts.session].filter((v) => v !== undefined).length;
    if (chosen !== 1) throw new UsageError('exactly one of --agent, --exec and --remote is required (or --session)');
    if (opts.pane !== undefined && (opts.remote !== undefined || opts.session !== undefined))
      throw new UsageError('--pane: only for a local agent (--agent or --exec)');
    if (opts.waitIdle !== undefined && opts.session === undefined) throw new UsageError('--wait-idle: only with --session');
    if (opts.session !== undefined && opts.agentSession !== undefined)
      throw new UsageError('--agent-session: not with --session (the job is for that session)');
    return opts;
  },
  async run(opts, ctx) {
    const brief = readBrief(opts, { stdin: ctx.io.stdin, cwd: ctx.cwd });
    const config = ctx.config();
    const registry = ctx.registry();
    await warnIfPublicSandbox(ctx);
    // Checked before the job is registered: a missing tmux must not leave a pending job behind.
    const pane = opts.pane === undefined ? undefined : await (await import('../pane-launch.ts')).tmuxPaneStarter(ctx);
    // Likewise an interactive Claude that would stop at a first-run screen nobody answers.
    if (pane && opts.agent === 'claude') (await import('../../core/agents/claude-first-run.ts')).assertClaudeReadyForPane(ctx.env, ctx.cwd);
    // A session that does not exist is a usage problem of this command (exit 66), before any job is registered.
    const session = opts.session === undefined ? undefined : await sessionDeliverer(ctx, opts.session, opts.waitIdle);
    const [{ Delegation }, output] = await Promise.all([import('../../core/delegate/delegation.ts'), import('../../core/subscriber/output.ts')]);
    const human = ctx.io.out.isTTY && !opts.json;
    let live = '';
    const write = (text: string) => {
      // On a terminal the status line is redrawn under the events; in a pipe stdout stays JSON lines.
      if (human && live) ctx.io.out.write('\r\x1b[K');
      ctx.io.out.write(text);
      if (human && live) ctx.io.out.write(live);
    };
    let ticker: NodeJS.Timeout | undefined;
    let last: DelegationStatus | undefined;
    const delegation = new Delegation(config, registry, {
      job: { agentSession: opts.session ?? opts.agentSession, brief, ...resolveJobLimits(askedLimits(opts), config), dependsOn: [] },
      agent: opts.agent !== undefined ? { agent: opts.agent } : opts.exec !== undefined ? { exec: opts.exec } : undefined,
      remoteSession: opts.remote,
      pane,
      session,
      embeddedBroker: opts.embeddedBroker,
      write,
      format: human ? output.prettyLine : output.jsonLine,
      log: commandLogger(ctx, 'mam-delegate'),
      stopSignal: ctx.stopSignal(),
      onEmbeddedBroker: ({ host, port }) => ctx.io.err.write(`mam delegate: no broker at ${host}:${port}; started the embedded one there for this job\n`),
      onRegistered: (record) => {
        ctx.io.err.write(`job ${record.job_id} registered\n`);
        if (!human) return;
        last = { jobId: record.job_id, status: 'pending', lastEvent: null, lastEventAt: null };
        ticker = setInterval(() => {
          live = statusLine(last!, ctx.now());
          ctx.io.out.write(`\r\x1b[K${live}`);
        }, 1000);
      },
      onSubscribed: ({ watching, broker }) => ctx.io.err.write(`SUBSCRIBED ${watching} ${broker}\n`),
      onStatus: (s) => (last = s),
      onPermissionRequired: ({ jobId, seq, detail }) => {
        // JSON lines stay as they are (the event is one of them); a person gets the answer to type.
        if (human) write(`${permissionLine(jobId, seq, detail)}\n`);
        else ctx.io.err.write(`job ${jobId}: permission required (seq ${seq}): mam approve --job ${jobId} --seq ${seq}, or mam deny\n`);
      },
    });
    try {
      const outcome = await delegation.run();
      const { line } = watchExit(outcome.watch);
      if (line) ctx.io.err.write(`${line}\n`);
      if (outcome.closed)
        ctx.io.err.write(
          `job ${outcome.jobId}: closed ${outcome.closed.status} (${outcome.closed.reason}${outcome.closed.why ? `: ${outcome.closed.why}` : ''})\n`,
        );
      return { kind: 'delegation', delegation: outcome };
    } finally {
      clearInterval(ticker);
      if (human && live) ctx.io.out.write('\r\x1b[K');
    }
  },
});
