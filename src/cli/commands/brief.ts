import * as z from 'zod/mini';

import { jobIdFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const briefOptions = z.object({
  job: jobIdFlag,
  preambleOnly: z.optional(z.boolean()),
  registry: z.optional(z.string()),
});

export const briefCommand = defineCommand({
  name: 'brief',
  summary: "print a job's prompt as MAM hands it to an agent: how to report, then the brief",
  configure: (cmd) =>
    registryOption(cmd).requiredOption('--job <id>', 'job id').option('--preamble-only', 'only the instructions on reporting, without the brief'),
  parse: (raw) => parseOptions(briefOptions, raw),
  async run(opts, ctx) {
    const registry = ctx.registry();
    const { agentPrompt, renderPreamble } = await import('../../core/agents/preamble.ts');
    const record = registry.read(opts.job);
    ctx.io.out.write(opts.preambleOnly ? renderPreamble(record) : agentPrompt(record));
  },
});
