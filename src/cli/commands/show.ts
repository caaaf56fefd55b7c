import * as z from 'zod/mini';
import { publicView } from '../../core/registry/job-record.ts';

import { jobIdFlag } from '../flags.ts';
import { parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const showOptions = z.object({ job: jobIdFlag, registry: z.optional(z.string()), json: z.optional(z.boolean()) });

export const showCommand = defineCommand({
  name: 'show',
  summary: "print one job's record (without its token)",
  examples: [
    ["one job's record (no token)", '--job 3f2a9c1d'],
    ['its status only', '--job 3f2a9c1d | jq -r .status'],
  ],
  configure: (cmd) => registryOption(cmd).requiredOption('--job <id>', 'job id').option('--json', 'print the record as JSON (the default)'),
  parse: (raw) => parseOptions(showOptions, raw),
  async run(opts, ctx) {
    const registry = ctx.registry();
    printJson(ctx.io.out, publicView(registry.read(opts.job)));
  },
});
