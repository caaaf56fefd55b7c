import * as z from 'zod/mini';
import { publicView } from '../../core/registry/job-record.ts';
import { loadContext } from '../context.ts';
import { parseOptions, printJson } from '../options.ts';
import { type CommandSpec, registryOption } from '../program.ts';

const pickOptions = z.object({
  agentSession: z.string({ error: 'required' }).check(z.minLength(1)),
  registry: z.optional(z.string()),
  json: z.optional(z.boolean()),
});

export const pickCommand: CommandSpec = {
  name: 'pick',
  summary: 'claim the oldest pickable pending job for an agent session (exit 4 when none)',
  configure: (cmd) =>
    registryOption(cmd).requiredOption('--agent-session <name>', 'the session claiming the job').option('--json', 'print the record as JSON (the default)'),
  async run(raw) {
    const opts = parseOptions(pickOptions, raw);
    const { registry } = loadContext(opts);
    printJson(publicView(await registry.pick(opts.agentSession)));
  },
};
