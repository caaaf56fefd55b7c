import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import { publicView } from '../../core/registry/job-record.ts';
import { addressingProblem, registerJob } from '../../core/registry/register-job.ts';
import { TRANSPORTS } from '../../core/vocabulary.ts';

import { jobIdFlag } from '../flags.ts';
import { askedLimits, jobFlags, jobOptionsShape, readBrief } from '../job-options.ts';
import { collect, parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const registerOptions = z.object({
  ...jobOptionsShape,
  jobId: z.optional(jobIdFlag),
  agentSession: z.optional(z.string().check(z.minLength(1))),
  to: z.optional(z.string()),
  transport: z._default(z.enum(TRANSPORTS), 'herdr'),
  dependsOn: z._default(z.array(jobIdFlag), []),
  registry: z.optional(z.string()),
  json: z.optional(z.boolean()),
});

export const registerCommand = defineCommand({
  name: 'register',
  summary: 'create a pending job record and its audit log; print the record',
  configure: (cmd) =>
    jobFlags(
      registryOption(cmd)
        .option('--job-id <id>', 'job id (8 lowercase hex); random by default')
        .option('--agent-session <name>', 'only this agent session may pick the job')
        .option('--to <address>', 'address the job: an agent NAME or capability:NAME (docs/coordination-reference.md)'),
    )
      .option('--transport <kind>', 'herdr (local pane, the default) or remote')
      .option('--depends-on <id>', 'job that must be completed first (repeatable)', collect)
      .option('--json', 'print the record as JSON (the default)'),
  parse(raw) {
    const opts = parseOptions(registerOptions, raw);
    // Checked here too, before a brief is read, in the flags' own words.
    const problem = addressingProblem(opts.to, opts.agentSession, { to: '--to', agentSession: '--agent-session' });
    if (problem !== undefined) throw new UsageError(problem);
    return opts;
  },
  async run(opts, ctx) {
    const brief = readBrief(opts, { stdin: ctx.io.stdin, cwd: ctx.cwd });
    const config = ctx.config();
    const registry = ctx.registry();
    const record = await registerJob(config, registry, {
      jobId: opts.jobId,
      agentSession: opts.agentSession,
      to: opts.to,
      brief,
      ...askedLimits(opts),
      transport: opts.transport,
      dependsOn: opts.dependsOn,
    });
    printJson(ctx.io.out, publicView(record));
  },
});
