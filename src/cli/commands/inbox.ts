import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import { agentNameSchema, parseCapabilities } from '../../core/fleet/fleet-names.ts';
import { loadContext } from '../context.ts';
import { parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const inboxOptions = z.object({
  agent: agentNameSchema,
  capabilities: z.optional(z.string()),
  json: z.optional(z.boolean()),
  registry: z.optional(z.string()),
});

export const inboxCommand = defineCommand({
  name: 'inbox',
  summary: 'what was addressed to an agent (jobs, alerts) since it last asked, each delivered once',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--agent <name>', 'the agent asking')
      .option('--capabilities <list>', 'its capabilities (default: what `mam agent up` last declared on this registry)')
      .option('--json', 'print the result as JSON (the default)'),
  parse(raw) {
    const opts = parseOptions(inboxOptions, raw);
    const capabilities = opts.capabilities === undefined ? undefined : parseCapabilities(opts.capabilities);
    if (typeof capabilities === 'string') throw new UsageError(`--capabilities: ${capabilities}`);
    return { ...opts, capabilities };
  },
  async run(opts) {
    const { config, registry } = loadContext(opts);
    const [{ takeInbox }, { readAgentCapabilities }] = await Promise.all([import('../../core/fleet/inbox.ts'), import('../../core/fleet/agent-card.ts')]);
    const capabilities = opts.capabilities ?? readAgentCapabilities(config.registryDir, opts.agent);
    printJson(await takeInbox(registry, config.logDir, opts.agent, capabilities));
  },
});
