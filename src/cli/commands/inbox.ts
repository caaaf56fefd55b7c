import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import { agentNameSchema, parseCapabilities } from '../../core/fleet/fleet-names.ts';
import type { MamConfig } from '../../core/config/config.ts';
import type { Invitation } from '../../core/fleet/roundtable.ts';
import { BrokerError } from '../../core/mqtt/broker-errors.ts';

import { parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const HELP = `
At session start (Claude Code, in .claude/settings.json):
  {"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"mam inbox --agent ada --text"}]}]}}
`;

const inboxOptions = z.object({
  agent: agentNameSchema,
  capabilities: z.optional(z.string()),
  json: z.optional(z.boolean()),
  text: z.optional(z.boolean()),
  registry: z.optional(z.string()),
});

export const inboxCommand = defineCommand({
  name: 'inbox',
  summary: 'what was addressed to an agent (jobs, alerts) since it last asked, each delivered once',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--agent <name>', 'the agent asking')
      .option('--capabilities <list>', 'its capabilities (default: what `mam agent up` last declared on this registry)')
      .option('--json', 'print the result as JSON (the default)')
      .option(
        '--text',
        "one line per item, nothing when there is none: for an agent's session-start hook (Claude Code adds a SessionStart hook's output to the conversation)",
      )
      .addHelpText('after', HELP),
  parse(raw) {
    const opts = parseOptions(inboxOptions, raw);
    const capabilities = opts.capabilities === undefined ? undefined : parseCapabilities(opts.capabilities);
    if (typeof capabilities === 'string') throw new UsageError(`--capabilities: ${capabilities}`);
    if (opts.json && opts.text) throw new UsageError('--json or --text, not both');
    return { ...opts, capabilities };
  },
  async run(opts, ctx) {
    const config = ctx.config();
    const registry = ctx.registry();
    const [{ takeInbox }, { readAgentCapabilities }] = await Promise.all([import('../../core/fleet/inbox.ts'), import('../../core/fleet/agent-card.ts')]);
    const capabilities = opts.capabilities ?? readAgentCapabilities(config.registryDir, opts.agent);
    const inbox = {
      ...(await takeInbox(registry, config.logDir, opts.agent, capabilities)),
      invitations: await invitationsFor(config, opts.agent, capabilities, ctx.warn),
    };
    if (!opts.text) return printJson(ctx.io.out, inbox);
    const { inboxText } = await import('../../core/fleet/inbox-text.ts');
    ctx.io.out.write(inboxText(inbox));
  },
});

/**
 * Roundtable invitations still open to the agent (the broker holds them, retained): read only with
 * the fleet secret, and a broker that cannot be reached costs them, with a warning, not the inbox.
 */
async function invitationsFor(config: MamConfig, agent: string, capabilities: readonly string[], warn: (message: string) => void): Promise<Invitation[]> {
  if (config.fleetSecret === undefined) return [];
  const { openInvitations } = await import('../../core/fleet/roundtable.ts');
  try {
    return await openInvitations(config, agent, capabilities);
  } catch (err) {
    if (!(err instanceof BrokerError)) throw err;
    warn(`roundtable invitations not read: ${err.message}`);
    return [];
  }
}
