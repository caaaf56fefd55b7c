import * as z from 'zod/mini';
import { AGENT_NAMES } from '../../core/agents/presets.ts';
import { UsageError } from '../../core/errors.ts';
import { publicView } from '../../core/registry/job-record.ts';
import { warnIfPublicSandbox } from '../context.ts';
import { jobIdFlag } from '../flags.ts';
import { parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const session = z
  .string()
  .check(z.minLength(1))
  .check(z.regex(/^[^\s]+$/, 'no spaces'));

const dispatchOptions = z.object({ job: jobIdFlag, session, registry: z.optional(z.string()) });
const runOptions = z.object({
  session,
  exec: z.optional(z.string().check(z.minLength(1))),
  agent: z.optional(z.enum(AGENT_NAMES)),
  once: z._default(z.boolean(), false),
  registry: z.optional(z.string()),
});

const dispatchCommand = defineCommand({
  name: 'dispatch',
  summary: 'hand a job to a runner of SESSION on another host (signed, retained, token sealed)',
  configure: (cmd) => registryOption(cmd).requiredOption('--job <id>', 'job id').requiredOption('--session <name>', "the runner's session name"),
  parse: (raw) => parseOptions(dispatchOptions, raw),
  async run(opts, ctx) {
    const config = ctx.config();
    const registry = ctx.registry();
    await warnIfPublicSandbox(ctx);
    const { dispatchJob } = await import('../../core/remote/dispatcher.ts');
    printJson(ctx.io.out, publicView(await dispatchJob(config, registry, opts.job, opts.session)));
  },
});

const runCommand = defineCommand({
  name: 'run',
  summary: 'take dispatches for SESSION and run CMD for each, one at a time (--once: one job, exit 0 if completed)',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--session <name>', 'the session this runner serves')
      .option('--agent <name>', `a known agent CLI: ${AGENT_NAMES.join(' | ')}`)
      .option('--exec <cmd>', 'any other agent command, run through sh -c (its prompt on stdin)')
      .option('--once', 'run one job, then exit 0 if it completed, else 1'),
  parse(raw) {
    const opts = parseOptions(runOptions, raw);
    if ((opts.agent === undefined) === (opts.exec === undefined)) throw new UsageError('exactly one of --agent and --exec is required');
    return opts;
  },
  async run(opts, ctx) {
    const config = ctx.config();
    const registry = ctx.registry();
    await warnIfPublicSandbox(ctx);
    const { RemoteRunner } = await import('../../core/remote/runner.ts');
    const runner = new RemoteRunner(config, registry, {
      session: opts.session,
      agent: opts.agent !== undefined ? { agent: opts.agent } : { exec: opts.exec! },
      once: opts.once,
      log: await ctx.logger('mam-remote'),
      stopSignal: ctx.stopSignal(),
      onSubscribed: () => ctx.io.err.write(`SUBSCRIBED remote runner for session ${opts.session}\n`),
      onCancelled: (jobId) => ctx.io.err.write(`job ${jobId}: cancelled by the delegator; stopping the agent\n`),
    });
    return { kind: 'runner', runner: await runner.run() };
  },
});

export const remoteCommand = defineCommand({
  name: 'remote',
  summary: 'delegate jobs to agents on other hosts through the broker',
  configure: (cmd) => cmd,
  parse: () => ({}),
  async run() {},
  subcommands: [dispatchCommand, runCommand],
});
