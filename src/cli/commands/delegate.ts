import * as z from 'zod/mini';
import { configSecrets } from '../../core/config/config.ts';
import { AGENT_NAMES } from '../../core/agents/presets.ts';
import type { DelegationStatus } from '../../core/delegate/delegation.ts';
import { UsageError } from '../../core/errors.ts';
import { resolveJobLimits } from '../../core/registry/job-limits.ts';
import { loadContext, warnIfPublicSandbox } from '../context.ts';
import { delegationExit, watchExit } from '../exit-codes.ts';
import { askedLimits, jobFlags, jobOptionsShape, readBrief } from '../job-options.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';
import { stopSignal } from '../signals.ts';

const delegateOptions = z.object({
  ...jobOptionsShape,
  exec: z.optional(z.string().check(z.minLength(1))),
  agent: z.optional(z.enum(AGENT_NAMES)),
  pane: z.optional(z.enum(['tmux'])),
  remote: z.optional(z.string().check(z.minLength(1))),
  agentSession: z.optional(z.string().check(z.minLength(1))),
  json: z.optional(z.boolean()),
  embeddedBroker: z._default(z.boolean(), true),
  registry: z.optional(z.string()),
});

/** The live line for a person at a terminal: job, status, last event, time since it. */
function statusLine(s: DelegationStatus): string {
  const since = s.lastEventAt === null ? '-' : `${Math.round((Date.now() - s.lastEventAt) / 1000)}s ago`;
  return `[${s.jobId}] ${s.status} · last ${s.lastEvent ?? 'none'} ${since}`;
}

/** The highlighted line a person sees when the agent waits for permission (reverse video, bold). */
export function permissionLine(jobId: string, seq: number, detail: string): string {
  const answer = `mam approve --job ${jobId} --seq ${seq}   |   mam deny --job ${jobId} --seq ${seq} --reason "…"`;
  return `\x1b[1;7m PERMISSION \x1b[0m \x1b[1m${detail}\x1b[0m\n            answer: ${answer}`;
}

export const delegateCommand = defineCommand({
  name: 'delegate',
  summary: 'register a job, launch its agent, watch it to the end (0 completed, 1 error/blocked/cancelled, 2 timeout, 3 broker)',
  configure: (cmd) =>
    jobFlags(registryOption(cmd))
      .option('--agent <name>', `run a known agent CLI locally: ${AGENT_NAMES.join(' | ')} (hooks and instructions set up for it)`)
      .option('--exec <cmd>', 'run any other agent command locally through sh -c (its prompt on stdin)')
      .option('--pane <kind>', 'run the local agent in a terminal pane you can attach to: tmux')
      .option('--remote <session>', 'dispatch the job to a mam-remote runner of this session')
      .option('--agent-session <name>', 'the agent session the job is for')
      .option('--json', 'JSON lines even on a terminal')
      .option('--no-embedded-broker', 'never start the embedded broker when none answers'),
  parse(raw) {
    const opts = parseOptions(delegateOptions, raw);
    const chosen = [opts.agent, opts.exec, opts.remote].filter((v) => v !== undefined).length;
    if (chosen !== 1) throw new UsageError('exactly one of --agent, --exec and --remote is required');
    if (opts.pane !== undefined && opts.remote !== undefined) throw new UsageError('--pane: only for a local agent (--agent or --exec)');
    return opts;
  },
  async run(opts) {
    const brief = readBrief(opts);
    const { config, registry } = loadContext(opts);
    await warnIfPublicSandbox(config);
    // Checked before the job is registered: a missing tmux must not leave a pending job behind.
    const pane = opts.pane === undefined ? undefined : await (await import('../pane-launch.ts')).tmuxPaneStarter();
    // Likewise an interactive Claude that would stop at a first-run screen nobody answers.
    if (pane && opts.agent === 'claude') (await import('../../core/agents/claude-first-run.ts')).assertClaudeReadyForPane(process.env, process.cwd());
    const [{ Delegation }, { createLogger }, output] = await Promise.all([
      import('../../core/delegate/delegation.ts'),
      import('../../core/log.ts'),
      import('../../core/subscriber/output.ts'),
    ]);
    const human = process.stdout.isTTY && !opts.json;
    let live = '';
    const write = (text: string) => {
      // On a terminal the status line is redrawn under the events; in a pipe stdout stays JSON lines.
      if (human && live) process.stdout.write('\r\x1b[K');
      process.stdout.write(text);
      if (human && live) process.stdout.write(live);
    };
    let ticker: NodeJS.Timeout | undefined;
    let last: DelegationStatus | undefined;
    const delegation = new Delegation(config, registry, {
      job: { agentSession: opts.agentSession, brief, ...resolveJobLimits(askedLimits(opts), config), dependsOn: [] },
      agent: opts.agent !== undefined ? { agent: opts.agent } : opts.exec !== undefined ? { exec: opts.exec } : undefined,
      remoteSession: opts.remote,
      pane,
      embeddedBroker: opts.embeddedBroker,
      write,
      format: human ? output.prettyLine : output.jsonLine,
      log: createLogger('mam-delegate', config.logLevel, configSecrets(config)),
      stopSignal: stopSignal(),
      onEmbeddedBroker: ({ host, port }) => process.stderr.write(`mam delegate: no broker at ${host}:${port}; started the embedded one there for this job\n`),
      onRegistered: (record) => {
        process.stderr.write(`job ${record.job_id} registered\n`);
        if (!human) return;
        last = { jobId: record.job_id, status: 'pending', lastEvent: null, lastEventAt: null };
        ticker = setInterval(() => {
          live = statusLine(last!);
          process.stdout.write(`\r\x1b[K${live}`);
        }, 1000);
      },
      onSubscribed: ({ watching, broker }) => process.stderr.write(`SUBSCRIBED ${watching} ${broker}\n`),
      onStatus: (s) => (last = s),
      onPermissionRequired: ({ jobId, seq, detail }) => {
        // JSON lines stay as they are (the event is one of them); a person gets the answer to type.
        if (human) write(`${permissionLine(jobId, seq, detail)}\n`);
        else process.stderr.write(`job ${jobId}: permission required (seq ${seq}): mam approve --job ${jobId} --seq ${seq}, or mam deny\n`);
      },
    });
    try {
      const outcome = await delegation.run();
      const { line } = watchExit(outcome.watch);
      if (line) process.stderr.write(`${line}\n`);
      if (outcome.closed) process.stderr.write(`job ${outcome.jobId}: closed ${outcome.closed.status} (${outcome.closed.reason})\n`);
      return delegationExit(outcome);
    } finally {
      clearInterval(ticker);
      if (human && live) process.stdout.write('\r\x1b[K');
    }
  },
});
