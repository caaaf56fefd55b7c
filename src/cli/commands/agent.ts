import os from 'node:os';
import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import { agentNameSchema, parseCapabilities } from '../../core/fleet/fleet-names.ts';
import { warnIfPublicSandbox } from '../context.ts';
import { secondsFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const upOptions = z.object({
  name: agentNameSchema,
  capabilities: z.optional(z.string()),
  host: z.optional(z.string().check(z.minLength(1))),
  refresh: z._default(secondsFlag, 30),
  registry: z.optional(z.string()),
});

const upCommand = defineCommand({
  name: 'up',
  summary: "keep an agent's signed presence on the broker until SIGINT/SIGTERM (a Last Will marks it offline if it dies)",
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--name <name>', "the agent's name (letters, digits, _ and -)")
      .option('--capabilities <list>', 'what it can do, comma-separated (e.g. review,typescript)')
      .option('--host <host>', 'the host it runs on (default this machine)')
      .option('--refresh <sec>', 'how often last_seen is refreshed (default 30)'),
  parse(raw) {
    const opts = parseOptions(upOptions, raw);
    const capabilities = parseCapabilities(opts.capabilities);
    if (typeof capabilities === 'string') throw new UsageError(`--capabilities: ${capabilities}`);
    return { ...opts, capabilities, host: opts.host ?? os.hostname() };
  },
  async run(opts, ctx) {
    const stop = ctx.stopSignal();
    const config = ctx.config();
    await warnIfPublicSandbox(ctx);
    const { AgentPresence } = await import('../../core/fleet/agent-presence.ts');
    const log = await ctx.logger('mam-agent');
    const agent = new AgentPresence(
      config,
      {
        name: opts.name,
        host: opts.host,
        capabilities: opts.capabilities,
        refreshSec: opts.refresh,
        log,
        // Like SUBSCRIBED: always printed, whatever the log level; scripts wait for it.
        onOnline: (broker) => ctx.io.err.write(`ONLINE ${opts.name} ${broker}\n`),
      },
      config.registryDir,
    );
    await agent.run(stop);
  },
});

export const agentCommand = defineCommand({
  name: 'agent',
  summary: 'run a fleet agent: presence, capabilities, Last Will',
  configure: (cmd) => cmd,
  parse: () => ({}),
  async run() {},
  subcommands: [upCommand],
});
