import * as z from 'zod/mini';
import { agentNameSchema, turnIdSchema } from '../../core/fleet/fleet-names.ts';
import { claimTurn } from '../claim-turn.ts';

import { countFlag, secondsFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const claimOptions = z.object({
  turn: turnIdSchema,
  agent: agentNameSchema,
  ttl: z._default(secondsFlag, 60),
  broker: z.optional(z.boolean()),
  settleMs: z.optional(countFlag),
  registry: z.optional(z.string()),
});

export const claimCommand = defineCommand({
  name: 'claim',
  summary: 'claim a turn (e.g. the answer to one chat message): exit 0 for exactly one claimant, 4 for the others, 1 on a failure',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--turn <id>', 'the turn: <channel>-<message>-<epoch> (docs/coordination-reference.md)')
      .requiredOption('--agent <name>', 'the claimant')
      .option('--ttl <sec>', 'how long a won claim holds the turn (default 60)')
      .option('--broker', 'claim across hosts over the broker (signed bids) instead of in the registry')
      .option('--settle-ms <ms>', 'with --broker: how long bids are listened for (default 1000)'),
  parse: (raw) => parseOptions(claimOptions, raw),
  async run(opts, ctx) {
    const result = await claimTurn(ctx, { turnId: opts.turn, agent: opts.agent, ttlSec: opts.ttl, broker: opts.broker, settleMs: opts.settleMs });
    ctx.io.out.write(`${JSON.stringify(result)}\n`);
    return { kind: 'claim', won: result.won };
  },
});
