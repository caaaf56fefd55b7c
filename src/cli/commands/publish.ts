import { z } from 'zod';
import { UsageError } from '../../core/errors.ts';
import { isPublicSandbox } from '../../core/mqtt/broker-target.ts';
import { EVENT_NAMES, parseUserData } from '../../core/wire/payloads.ts';
import { loadContext } from '../context.ts';
import { countFlag, jobIdFlag, secondsFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { type CommandSpec, registryOption } from '../program.ts';

const publishOptions = z.object({
  job: jobIdFlag,
  event: z.enum(EVENT_NAMES),
  detail: z.string().optional(),
  data: z.string().optional(),
  heartbeat: secondsFlag.optional(),
  watchPid: countFlag.optional(),
  attempts: countFlag.default(3),
  expectDispatchToken: z.string().regex(/^[0-9a-f]{32}$/, 'expected 32 hex characters').optional(),
  attemptId: countFlag.optional(),
  registry: z.string().optional(),
});

export const publishCommand: CommandSpec = {
  name: 'publish',
  summary: 'record, sign and publish one lifecycle event (exit 2: on disk, not delivered; 5: refused)',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--job <id>', 'job id')
      .requiredOption('--event <event>', EVENT_NAMES.join(' | '))
      .option('--detail <text>', 'what happened (default "Job <id> <event>"); paths and secrets are scrubbed')
      .option('--data <json>', 'extra JSON object (at most 64 KiB) carried in data')
      .option('--heartbeat <sec>', 'with started: publish a heartbeat every N seconds until the job ends')
      .option('--watch-pid <pid>', 'with --heartbeat: stop beating when this process ends')
      .option('--attempts <n>', 'delivery tries in total', '3')
      .option('--expect-dispatch-token <token>', 'refuse unless this is the current attempt (redispatched jobs)')
      .option('--attempt-id <n>', 'refuse unless this is the current attempt id'),
  async run(raw) {
    const opts = parseOptions(publishOptions, raw);
    if (opts.heartbeat !== undefined && opts.event !== 'started') throw new UsageError('--heartbeat: only with --event started');
    if (opts.watchPid !== undefined && opts.heartbeat === undefined) throw new UsageError('--watch-pid: only with --heartbeat');
    const data = opts.data === undefined ? undefined : parseUserData(opts.data);
    const { config, registry } = loadContext(opts);
    if (isPublicSandbox(config.broker.host)) {
      process.stderr.write(`WARNING: ${config.broker.host} is a PUBLIC sandbox broker: anyone can read these events and see your job ids. Use a private broker.\n`);
    }
    const { publishEvent } = await import('../../core/publisher/publisher.ts');
    const result = await publishEvent(config, registry, {
      jobId: opts.job,
      event: opts.event,
      detail: opts.detail,
      data,
      attempts: opts.attempts,
      expectDispatchToken: opts.expectDispatchToken,
      expectAttemptId: opts.attemptId,
    });
    process.stdout.write(`${JSON.stringify(result.event)}\n`);
  },
};
