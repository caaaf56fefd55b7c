import * as z from 'zod/mini';
import { publicView } from '../../core/registry/job-record.ts';
import { loadContext, warnIfPublicSandbox } from '../context.ts';
import { jobIdFlag } from '../flags.ts';
import { parseOptions, printJson } from '../options.ts';
import { type CommandSpec, registryOption } from '../program.ts';

const closeOptions = z.object({
  job: jobIdFlag,
  request: z.enum(['cancelled', 'deadline_timeout', 'completed', 'error']),
  registry: z.optional(z.string()),
  json: z.optional(z.boolean()),
});

export const closeCommand: CommandSpec = {
  name: 'close',
  summary: 'operator close: cancelled, deadline_timeout (status error), completed or error',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--job <id>', 'job id')
      .requiredOption('--request <request>', 'cancelled | deadline_timeout | completed | error')
      .option('--json', 'print the record as JSON (the default)'),
  async run(raw) {
    const opts = parseOptions(closeOptions, raw);
    const { config, registry } = loadContext(opts);
    await warnIfPublicSandbox(config);
    const { record } = await registry.close(opts.job, opts.request);
    printJson(publicView(record));
    // The close is committed; telling watchers over the broker is best effort (contract §1).
    const { publishCloseState } = await import('../../core/publisher/close-state.ts');
    const failure = await publishCloseState(config, record, opts.request);
    if (failure) process.stderr.write(`warning: job ${record.job_id} closed, but watchers were not told over the broker (${failure.message})\n`);
  },
};
