import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import * as z from 'zod/mini';
import type { MamConfig } from '../../core/config/config.ts';
import { UsageError } from '../../core/errors.ts';
import { publicView } from '../../core/registry/job-record.ts';
import { loadContext } from '../context.ts';
import { countFlag, jobIdFlag, secondsFlag } from '../flags.ts';
import { collect, parseOptions, printJson } from '../options.ts';
import { type CommandSpec, registryOption } from '../program.ts';

const registerOptions = z.object({
  jobId: z.optional(jobIdFlag),
  agentSession: z.optional(z.string().check(z.minLength(1))),
  brief: z.optional(z.string()),
  briefFile: z.optional(z.string().check(z.minLength(1))),
  heartbeat: z.optional(secondsFlag),
  heartbeatMisses: z.optional(countFlag),
  ackTimeout: z.optional(secondsFlag),
  idleTimeout: z.optional(secondsFlag),
  timeout: z.optional(secondsFlag),
  transport: z._default(z.enum(['herdr', 'remote']), 'herdr'),
  dependsOn: z._default(z.array(jobIdFlag), []),
  registry: z.optional(z.string()),
  json: z.optional(z.boolean()),
});
export type RegisterOptions = z.infer<typeof registerOptions>;

/** The timing flags, shared with `mam delegate`. */
export function timingFlags(cmd: Command): Command {
  return cmd
    .option('--heartbeat <sec>', 'heartbeat period N in seconds (default MAM_HEARTBEAT_SEC, 30)')
    .option('--heartbeat-misses <k>', 'beats missed before the job counts as idle (default MAM_HEARTBEAT_MISSES, 4)')
    .option('--ack-timeout <sec>', 'time allowed before `started` (default MAM_ACK_TIMEOUT_S, 180)')
    .option('--idle-timeout <sec>', 'silence allowed after the last event (default misses × heartbeat)')
    .option('--timeout <sec>', 'wall-clock budget of the job (default 3600)');
}

export function readBrief(opts: { brief?: string | undefined; briefFile?: string | undefined }): string {
  if (opts.brief !== undefined && opts.briefFile !== undefined) throw new UsageError('--brief and --brief-file are exclusive');
  if (opts.briefFile === undefined) return opts.brief ?? '';
  try {
    return readFileSync(opts.briefFile === '-' ? 0 : opts.briefFile, 'utf8');
  } catch (err) {
    throw new UsageError(`--brief-file: ${opts.briefFile}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** The timing flags and defaults into the registry's input (shared with `mam delegate`). */
export function timingInput(
  opts: { heartbeat?: number | undefined; heartbeatMisses?: number | undefined; ackTimeout?: number | undefined; idleTimeout?: number | undefined; timeout?: number | undefined },
  config: MamConfig,
) {
  return {
    heartbeatSec: opts.heartbeat ?? config.heartbeatSec,
    heartbeatMisses: opts.heartbeatMisses ?? config.heartbeatMisses,
    ackTimeoutSec: opts.ackTimeout ?? config.ackTimeoutSec,
    idleTimeoutSec: opts.idleTimeout,
    timeoutSec: opts.timeout ?? DEFAULT_TIMEOUT_SEC,
  };
}

/** Contract §2: the wall budget of a job, unless given. */
const DEFAULT_TIMEOUT_SEC = 3600;

export const registerCommand: CommandSpec = {
  name: 'register',
  summary: 'create a pending job record and its audit log; print the record',
  configure: (cmd) =>
    timingFlags(
      registryOption(cmd)
        .option('--job-id <id>', 'job id (8 lowercase hex); random by default')
        .option('--agent-session <name>', 'only this agent session may pick the job')
        .option('--brief <text>', 'what the agent is asked to do')
        .option('--brief-file <file>', 'read the brief from a file (- for stdin)'),
    )
      .option('--transport <kind>', 'herdr (local pane) or remote', 'herdr')
      .option('--depends-on <id>', 'job that must be completed first (repeatable)', collect, [])
      .option('--json', 'print the record as JSON (the default)'),
  async run(raw) {
    const opts = parseOptions(registerOptions, raw);
    const brief = readBrief(opts);
    const { config, registry } = loadContext(opts);
    const record = await registry.register({
      jobId: opts.jobId,
      agentSession: opts.agentSession,
      brief,
      ...timingInput(opts, config),
      transport: opts.transport,
      dependsOn: opts.dependsOn,
    });
    printJson(publicView(record));
  },
};
