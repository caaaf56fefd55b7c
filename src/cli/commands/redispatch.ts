import * as z from 'zod/mini';
import { publicView } from '../../core/registry/job-record.ts';

import { jobIdFlag } from '../flags.ts';
import { parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const redispatchOptions = z.object({ job: jobIdFlag, registry: z.optional(z.string()), json: z.optional(z.boolean()) });

export const redispatchCommand = defineCommand({
  name: 'redispatch',
  summary: 'make a job pending again as a new attempt, with a fresh dispatch token',
  configure: (cmd) => registryOption(cmd).requiredOption('--job <id>', 'job id').option('--json', 'print the record as JSON (the default)'),
  parse: (raw) => parseOptions(redispatchOptions, raw),
  async run(opts, ctx) {
    const registry = ctx.registry();
    const { record } = await registry.redispatch(opts.job);
    printJson(ctx.io.out, publicView(record));
  },
});
