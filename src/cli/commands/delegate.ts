import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import type { DelegationStatus } from '../../core/delegate/delegation.ts';
import { loadContext, warnIfPublicSandbox } from '../context.ts';
import { countFlag, secondsFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { type CommandSpec, registryOption } from '../program.ts';
import { stopSignal } from '../signals.ts';
import { readBrief, timingFlags, timingInput } from './register.ts';

const delegateOptions = z.object({
  brief: z.optional(z.string()),
  briefFile: z.optional(z.string().check(z.minLength(1))),
  exec: z.optional(z.string().check(z.minLength(1))),
  remote: z.optional(z.string().check(z.minLength(1))),
  agentSession: z.optional(z.string().check(z.minLength(1))),
  heartbeat: z.optional(secondsFlag),
  heartbeatMisses: z.optional(countFlag),
  ackTimeout: z.optional(secondsFlag),
  idleTimeout: z.optional(secondsFlag),
  timeout: z.optional(secondsFlag),
  json: z.optional(z.boolean()),
  embeddedBroker: z._default(z.boolean(), true),
  registry: z.optional(z.string()),
});


/** The live line for a person at a terminal: job, status, last event, time since it. */
function statusLine(s: DelegationStatus): string {
  const since = s.lastEventAt === null ? '-' : `${Math.round((Date.now() - s.lastEventAt) / 1000)}s ago`;
  return `[${s.jobId}] ${s.status} · last ${s.lastEvent ?? 'none'} ${since}`;
}

export const delegateCommand: CommandSpec = {
  name: 'delegate',
  summary: 'register a job, launch its agent, watch it to the end (0 completed, 1 error/blocked/cancelled, 2 timeout, 3 broker)',
  configure: (cmd) =>
    timingFlags(
      registryOption(cmd)
        .option('--brief <text>', 'what the agent is asked to do')
        .option('--brief-file <file>', 'read the brief from a file (- for stdin)')
        .option('--exec <cmd>', 'run the agent locally through sh -c')
        .option('--remote <session>', 'dispatch the job to a mam-remote runner of this session')
        .option('--agent-session <name>', 'the agent session the job is for'),
    )
      .option('--json', 'JSON lines even on a terminal')
      .option('--no-embedded-broker', 'never start the embedded broker when none answers'),
  async run(raw) {
    const opts = parseOptions(delegateOptions, raw);
    if ((opts.exec === undefined) === (opts.remote === undefined)) throw new UsageError('exactly one of --exec and --remote is required');
    const brief = readBrief(opts);
    const { config, registry } = loadContext(opts);
    await warnIfPublicSandbox(config);
    const [{ Delegation }, { createLogger }, output] = await Promise.all([
      import('../../core/delegate/delegation.ts'),
      import('../../core/log.ts'),
      import('../../core/subscriber/output.ts'),
    ]);
    const human = process.stdout.isTTY && !opts.json;
    let live = '';
    const write = (text: string) => {
      // On a terminal the status line is redrawn under the events; in a pipe stdout stays JSON lines.
      if (human && live) process.stdout.write('\r\x1b[K');
      process.stdout.write(text);
      if (human && live) process.stdout.write(live);
    };
    let ticker: NodeJS.Timeout | undefined;
    let last: DelegationStatus | undefined;
    const delegation = new Delegation(config, registry, {
      job: {
        agentSession: opts.agentSession,
        brief,
        ...timingInput(opts, config),
        dependsOn: [],
      },
      exec: opts.exec,
      remoteSession: opts.remote,
      embeddedBroker: opts.embeddedBroker,
      write,
      format: human ? output.prettyLine : output.jsonLine,
      log: createLogger('mam-delegate', config.logLevel),
      stopSignal: stopSignal(),
      onRegistered: (record) => {
        process.stderr.write(`job ${record.job_id} registered\n`);
        if (!human) return;
        last = { jobId: record.job_id, status: 'pending', lastEvent: null, lastEventAt: null };
        ticker = setInterval(() => {
          live = statusLine(last!);
          process.stdout.write(`\r\x1b[K${live}`);
        }, 1000);
      },
      onStatus: (s) => (last = s),
    });
    try {
      return await delegation.run();
    } finally {
      clearInterval(ticker);
      if (human && live) process.stdout.write('\r\x1b[K');
    }
  },
};
