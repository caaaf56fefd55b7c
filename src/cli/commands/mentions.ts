import * as z from 'zod/mini';
import { agentNameSchema, turnIdOf, turnIdSchema } from '../../core/fleet/fleet-names.ts';
import { aliasBook, decideMention, mentionsInText } from '../../core/fleet/mention-rules.ts';
import { UsageError } from '../../core/errors.ts';
import type { ClaimResult } from '../../core/fleet/turn-claim.ts';
import { claimTurn } from '../claim-turn.ts';

import { countFlag, nonEmptyFlag, secondsFlag } from '../flags.ts';
import { collect, parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const HELP = `
Exit codes: 0 respond (addressed, or the turn is won), 6 stay silent (another agent is addressed),
4 the turn is another agent's (lost, not failed), 1 a failure (e.g. no broker), 64 a bad flag.
Prints one JSON object: {"agent","action","rule","mentioned","decided_by","turn_id","claim"}.
`;

const names = z._default(z.array(z.string()), []);

const mentionsOptions = z.object({
  agent: agentNameSchema,
  mention: names,
  text: z.optional(z.string()),
  threadMention: names,
  threadText: z.optional(z.string()),
  inThread: z.optional(z.boolean()),
  alias: z._default(z.array(nonEmptyFlag).check(z.maxLength(32)), []),
  turn: z.optional(turnIdSchema),
  channel: z.optional(nonEmptyFlag),
  message: z.optional(nonEmptyFlag),
  epoch: z.optional(nonEmptyFlag),
  ttl: z._default(secondsFlag, 60),
  broker: z.optional(z.boolean()),
  settleMs: z.optional(countFlag),
  registry: z.optional(z.string()),
});

type MentionsOptions = z.infer<typeof mentionsOptions> & { turnId: string };

export const mentionsCommand = defineCommand({
  name: 'mentions',
  summary: 'apply the @mention rules to one chat message: respond (0), stay silent (6), or race for the turn (0 won, 4 lost)',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--agent <name>', 'the agent asking')
      .option('--mention <name>', "a name the message mentions (repeatable; the chat's own mention list)", collect)
      .option('--text <text>', 'the message text, read for @name mentions')
      .option('--thread-mention <name>', 'for a reply in a thread: a name the thread parent mentions (repeatable)', collect)
      .option('--thread-text <text>', "for a reply in a thread: the parent's text, read for @name mentions")
      .option('--in-thread', 'the message is a reply in a thread whose parent mentions no one')
      .option('--alias <name>', 'another name this agent answers to (repeatable; fleet-wide: MAM_AGENT_ALIASES)', collect)
      .option('--turn <id>', 'the turn to claim when no one is mentioned (else from --channel/--message/--epoch)')
      .option('--channel <id>', 'the chat channel (with --message and --epoch: the turn id)')
      .option('--message <id>', 'the message id')
      .option('--epoch <n>', 'the epoch of the message (e.g. its Unix time)')
      .option('--ttl <sec>', 'how long a won claim holds the turn (default 60)')
      .option('--broker', 'claim across hosts over the broker (signed bids) instead of in the registry')
      .option('--settle-ms <ms>', 'with --broker: how long bids are listened for (default 1000)')
      .addHelpText('after', HELP),
  parse: (raw): MentionsOptions => {
    const opts = parseOptions(mentionsOptions, raw);
    // Every message may need its turn: a command run per message knows its ids, so they are asked for up front.
    const parts = [opts.channel, opts.message, opts.epoch];
    if (opts.turn !== undefined && parts.some((p) => p !== undefined)) throw new UsageError('--turn or --channel/--message/--epoch, not both');
    if (opts.turn === undefined && parts.some((p) => p === undefined)) {
      throw new UsageError('the turn to claim when no one is mentioned: --turn, or --channel, --message and --epoch');
    }
    return { ...opts, turnId: opts.turn ?? turnIdOf(opts.channel!, opts.message!, opts.epoch!) };
  },
  async run(opts: MentionsOptions, ctx) {
    const config = ctx.config();
    const book = aliasBook(config.agentAliases, opts.agent, opts.alias);
    const fromText = (text: string | undefined) => (text === undefined ? [] : mentionsInText(text, book));
    const inThread = opts.inThread === true || opts.threadText !== undefined || opts.threadMention.length > 0;
    const verdict = decideMention(
      {
        agent: opts.agent,
        mentions: [...opts.mention, ...fromText(opts.text)],
        threadMentions: inThread ? [...opts.threadMention, ...fromText(opts.threadText)] : undefined,
      },
      book,
    );
    let claim: ClaimResult | null = null;
    let action: 'respond' | 'silent' | 'claim_lost';
    if (verdict.action === 'claim') {
      claim = await claimTurn(ctx, { turnId: opts.turnId, agent: opts.agent, ttlSec: opts.ttl, broker: opts.broker, settleMs: opts.settleMs });
      action = claim.won ? 'respond' : 'claim_lost';
    } else {
      action = verdict.action;
    }
    const out = { agent: opts.agent, action, rule: verdict.rule, mentioned: verdict.mentioned, decided_by: verdict.decidedBy, turn_id: opts.turnId, claim };
    ctx.io.out.write(`${JSON.stringify(out)}\n`);
    return { kind: 'mention', action: action === 'claim_lost' ? 'lost' : action };
  },
});
