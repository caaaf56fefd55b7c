import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import { parseAddress } from '../../core/fleet/addressing.ts';
import { agentNameSchema, parseCapabilities, turnIdSchema } from '../../core/fleet/fleet-names.ts';
import { MAX_ROUNDTABLE_TEXT } from '../../core/fleet/roundtable-messages.ts';
import { warnIfPublicSandbox } from '../context.ts';
import { countFlag, secondsFlag } from '../flags.ts';
import { collect, parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

/** Prose for a model: bounded, and never empty. */
const prose = (flag: string) =>
  z
    .string()
    .check(z.trim())
    .check(z.minLength(1, `${flag}: expected a value`), z.maxLength(MAX_ROUNDTABLE_TEXT, `${flag}: at most ${MAX_ROUNDTABLE_TEXT} characters`));

const askOptions = z.object({
  turn: turnIdSchema,
  agent: agentNameSchema,
  to: z.array(z.string()).check(z.minLength(1, 'expected at least one --to'), z.maxLength(64)),
  question: prose('--question'),
  deadline: z._default(secondsFlag, 60),
  registry: z.optional(z.string()),
});

const askCommand = defineCommand({
  name: 'ask',
  summary: 'invite counsel on a turn you hold; prints what arrived by the deadline, to synthesize one answer',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--turn <id>', 'the turn you claimed')
      .requiredOption('--agent <name>', 'you, the claimant')
      .requiredOption('--to <address>', 'an agent NAME or capability:NAME to ask (repeatable)', collect)
      .requiredOption('--question <text>', 'what you ask them')
      .option('--deadline <sec>', 'how long counsel is waited for (default 60)'),
  parse(raw) {
    const opts = parseOptions(askOptions, raw);
    for (const to of opts.to) {
      const address = parseAddress(to);
      if (typeof address === 'string') throw new UsageError(`--to ${JSON.stringify(to)}: ${address}`);
      if (address.kind === 'agent' && address.name === opts.agent) throw new UsageError(`--to ${to}: you cannot counsel yourself`);
    }
    return opts;
  },
  async run(opts, ctx) {
    const config = ctx.config();
    await warnIfPublicSandbox(ctx);
    const { askRoundtable } = await import('../../core/fleet/roundtable.ts');
    printJson(
      ctx.io.out,
      await askRoundtable(config, { turnId: opts.turn, from: opts.agent, to: [...new Set(opts.to)], question: opts.question, deadlineSec: opts.deadline }),
    );
  },
});

const counselOptions = z.object({
  turn: turnIdSchema,
  agent: agentNameSchema,
  text: prose('--text'),
  capabilities: z.optional(z.string()),
  settleMs: z.optional(countFlag),
  registry: z.optional(z.string()),
});

const counselCommand = defineCommand({
  name: 'counsel',
  summary: 'answer an invitation to a roundtable, once: exit 0 given, 4 not invited, 5 already given',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--turn <id>', 'the turn you were invited to')
      .requiredOption('--agent <name>', 'you')
      .requiredOption('--text <counsel>', 'your counsel, for the claimant only')
      .option('--capabilities <list>', 'your capabilities (default: what `mam agent up` last declared on this registry)')
      .option('--settle-ms <ms>', 'how long the invitation is waited for (default 500)'),
  parse(raw) {
    const opts = parseOptions(counselOptions, raw);
    const capabilities = opts.capabilities === undefined ? undefined : parseCapabilities(opts.capabilities);
    if (typeof capabilities === 'string') throw new UsageError(`--capabilities: ${capabilities}`);
    return { ...opts, capabilities };
  },
  async run(opts, ctx) {
    const config = ctx.config();
    await warnIfPublicSandbox(ctx);
    const [{ giveCounsel }, { readAgentCapabilities }] = await Promise.all([
      import('../../core/fleet/roundtable.ts'),
      import('../../core/fleet/agent-card.ts'),
    ]);
    const capabilities = opts.capabilities ?? readAgentCapabilities(config.registryDir, opts.agent);
    const outcome = await giveCounsel(config, { turnId: opts.turn, agent: opts.agent, capabilities, text: opts.text, settleMs: opts.settleMs });
    printJson(ctx.io.out, outcome);
    if (outcome.given) {
      if (outcome.late) ctx.warn(`counsel after the deadline (${outcome.deadline}): recorded as late, not as counsel on time`);
      return { kind: 'counsel', result: 'given' };
    }
    return { kind: 'counsel', result: outcome.reason === 'already_given' ? 'already_given' : 'not_invited' };
  },
});

const showOptions = z.object({
  turn: turnIdSchema,
  settleMs: z.optional(countFlag),
  registry: z.optional(z.string()),
});

const showCommand = defineCommand({
  name: 'show',
  summary: "a turn's roundtable as the broker holds it: the invitation, counsel on time and late (exit 66: none)",
  configure: (cmd) =>
    registryOption(cmd).requiredOption('--turn <id>', 'the turn').option('--settle-ms <ms>', 'how long retained messages are waited for (default 500)'),
  parse: (raw) => parseOptions(showOptions, raw),
  async run(opts, ctx) {
    const config = ctx.config();
    const { readRoundtable } = await import('../../core/fleet/roundtable.ts');
    const table = await readRoundtable(config, opts.turn, opts.settleMs);
    if (!table) {
      ctx.io.err.write(`ERROR: no roundtable for turn ${opts.turn}\n`);
      return { kind: 'roundtable', found: false };
    }
    printJson(ctx.io.out, table);
    return { kind: 'roundtable', found: true };
  },
});

export const roundtableCommand = defineCommand({
  name: 'roundtable',
  summary: "the seed's roundtable: the claimant of a turn asks others for counsel before it answers",
  configure: (cmd) => cmd,
  parse: () => ({}),
  async run() {},
  subcommands: [askCommand, counselCommand, showCommand],
});
