import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import { parseCapabilities } from '../../core/fleet/fleet-names.ts';
import { publicView } from '../../core/registry/job-record.ts';

import { nonEmptyFlag } from '../flags.ts';
import { parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const pickOptions = z.object({
  agentSession: nonEmptyFlag,
  capabilities: z.optional(z.string()),
  registry: z.optional(z.string()),
  json: z.optional(z.boolean()),
});

export const pickCommand = defineCommand({
  name: 'pick',
  summary: 'claim the oldest pickable pending job for an agent session (exit 4 when none)',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--agent-session <name>', 'the session claiming the job')
      .option('--capabilities <list>', 'also claim jobs addressed to one of these capabilities (comma-separated)')
      .option('--json', 'print the record as JSON (the default)'),
  parse(raw) {
    const opts = parseOptions(pickOptions, raw);
    const capabilities = parseCapabilities(opts.capabilities);
    if (typeof capabilities === 'string') throw new UsageError(`--capabilities: ${capabilities}`);
    return { ...opts, capabilities };
  },
  async run(opts, ctx) {
    const registry = ctx.registry();
    printJson(ctx.io.out, publicView(await registry.pick(opts.agentSession, opts.capabilities)));
  },
});
