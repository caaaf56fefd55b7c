import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import { EVENT_NAMES, parseUserData } from '../../core/wire/payloads.ts';
import { loadContext, warnIfPublicSandbox } from '../context.ts';
import { countFlag, jobIdFlag, secondsFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { type CommandSpec, registryOption } from '../program.ts';

const publishOptions = z.object({
  job: jobIdFlag,
  event: z.enum(EVENT_NAMES),
  detail: z.optional(z.string()),
  data: z.optional(z.string()),
  heartbeat: z.optional(secondsFlag),
  watchPid: z.optional(countFlag),
  attempts: z._default(countFlag, 3),
  expectDispatchToken: z.optional(z.string().check(z.regex(/^[0-9a-f]{32}$/, 'expected 32 hex characters'))),
  attemptId: z.optional(countFlag),
  registry: z.optional(z.string()),
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
    await warnIfPublicSandbox(config);
    const [{ NotDelivered, publishEvent }, { wireJson }] = await Promise.all([
      import('../../core/publisher/publisher.ts'),
      import('../../core/wire/canonical-json.ts'),
    ]);
    let watchPid: number | undefined;
    if (opts.heartbeat !== undefined) {
      const [{ defaultWatchPid }, { isAlive }] = await Promise.all([import('../../core/heartbeat/agent-ancestor.ts'), import('../../core/heartbeat/proc.ts')]);
      if (opts.watchPid !== undefined && !isAlive(opts.watchPid)) throw new UsageError(`--watch-pid: no such process ${opts.watchPid}`);
      watchPid = opts.watchPid ?? defaultWatchPid();
    }
    let result;
    let undelivered: InstanceType<typeof NotDelivered> | undefined;
    try {
      result = await publishEvent(config, registry, {
        jobId: opts.job,
        event: opts.event,
        detail: opts.detail,
        data,
        attempts: opts.attempts,
        expectDispatchToken: opts.expectDispatchToken,
        expectAttemptId: opts.attemptId,
      });
    } catch (err) {
      // Contract §5: the timer is armed once `started` is recorded, delivered or not (exit 2 still follows).
      if (!(err instanceof NotDelivered) || watchPid === undefined) throw err;
      undelivered = err;
      result = err.result;
    }
    // wireJson: numbers from --data keep the spelling they were signed with.
    if (!undelivered) process.stdout.write(`${wireJson(result.event)}\n`);
    if (opts.heartbeat !== undefined && watchPid !== undefined) {
      const { startHeartbeat } = await import('../../core/heartbeat/timer-control.ts');
      const { record } = result;
      const outcome = await startHeartbeat(
        registry,
        { jobId: record.job_id, attemptId: record.attempt_id, dispatchToken: record.dispatch_token, periodSec: opts.heartbeat, watchPid },
        config.heartbeatDrainSec * 1000,
      );
      if (!outcome.armed) process.stderr.write(`warning: job ${record.job_id}: heartbeat not started: ${outcome.reason}\n`);
    }
    if (undelivered) throw undelivered;
  },
};
