import * as z from 'zod/mini';
import { publicView } from '../../core/registry/job-record.ts';
import { CLOSE_REQUESTS } from '../../core/vocabulary.ts';
import { warnIfPublicSandbox } from '../context.ts';
import { jobIdFlag } from '../flags.ts';
import { parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const closeOptions = z.object({
  job: jobIdFlag,
  request: z.enum(CLOSE_REQUESTS),
  registry: z.optional(z.string()),
  json: z.optional(z.boolean()),
});

export const closeCommand = defineCommand({
  name: 'close',
  summary: 'operator close: cancelled, deadline_timeout (status error), completed or error',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--job <id>', 'job id')
      .requiredOption('--request <request>', CLOSE_REQUESTS.join(' | '))
      .option('--json', 'print the record as JSON (the default)'),
  parse: (raw) => parseOptions(closeOptions, raw),
  async run(opts, ctx) {
    const config = ctx.config();
    const registry = ctx.registry();
    await warnIfPublicSandbox(ctx);
    const { closeJob } = await import('../../core/publisher/close-state.ts');
    const { record, notice } = await closeJob(config, registry, opts.job, opts.request);
    printJson(ctx.io.out, publicView(record));
    if (notice) ctx.io.err.write(`warning: job ${record.job_id} closed, but watchers were not told over the broker (${notice.message})\n`);
  },
});
