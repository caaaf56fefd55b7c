import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import { parseUserData } from '../../core/wire/payloads.ts';
import { LIFECYCLE_EVENTS } from '../../core/vocabulary.ts';
import { warnIfPublicSandbox } from '../context.ts';
import { countFlag, dispatchTokenFlag, jobIdFlag, secondsFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const publishOptions = z.object({
  job: jobIdFlag,
  event: z.enum(LIFECYCLE_EVENTS),
  detail: z.optional(z.string()),
  data: z.optional(z.string()),
  heartbeat: z.optional(secondsFlag),
  watchPid: z.optional(countFlag),
  attempts: z._default(countFlag, 3),
  expectDispatchToken: z.optional(dispatchTokenFlag),
  attemptId: z.optional(countFlag),
  registry: z.optional(z.string()),
});

export const publishCommand = defineCommand({
  name: 'publish',
  summary: 'record, sign and publish one lifecycle event (exit 2: on disk, not delivered; 5: refused)',
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--job <id>', 'job id')
      .requiredOption('--event <event>', LIFECYCLE_EVENTS.join(' | '))
      .option('--detail <text>', 'what happened (default "Job <id> <event>"); paths and secrets are scrubbed')
      .option('--data <json>', 'extra JSON object (at most 64 KiB) carried in data')
      .option('--heartbeat <sec>', 'with started: publish a heartbeat every N seconds until the job ends')
      .option('--watch-pid <pid>', 'with --heartbeat: stop beating when this process ends')
      .option('--attempts <n>', 'delivery tries in total (default 3)')
      .option('--expect-dispatch-token <token>', 'refuse unless this is the current attempt (redispatched jobs)')
      .option('--attempt-id <n>', 'refuse unless this is the current attempt id'),
  parse(raw) {
    const opts = parseOptions(publishOptions, raw);
    if (opts.heartbeat !== undefined && opts.event !== 'started') throw new UsageError('--heartbeat: only with --event started');
    if (opts.watchPid !== undefined && opts.heartbeat === undefined) throw new UsageError('--watch-pid: only with --heartbeat');
    return { ...opts, data: opts.data === undefined ? undefined : parseUserData(opts.data) };
  },
  async run(opts, ctx) {
    const config = ctx.config();
    const registry = ctx.registry();
    await warnIfPublicSandbox(ctx);
    const [{ publishAgentEvent }, { wireJson }] = await Promise.all([
      import('../../core/publisher/agent-publish.ts'),
      import('../../core/wire/canonical-json.ts'),
    ]);
    const outcome = await publishAgentEvent(
      config,
      registry,
      {
        jobId: opts.job,
        event: opts.event,
        detail: opts.detail,
        data: opts.data,
        attempts: opts.attempts,
        expectDispatchToken: opts.expectDispatchToken,
        expectAttemptId: opts.attemptId,
      },
      opts.heartbeat === undefined ? undefined : { periodSec: opts.heartbeat, watchPid: opts.watchPid },
    );
    // wireJson: numbers from --data keep the spelling they were signed with.
    if (!outcome.notDelivered) ctx.io.out.write(`${wireJson(outcome.result.event)}\n`);
    if (outcome.heartbeat && !outcome.heartbeat.armed) ctx.warn(`job ${opts.job}: heartbeat not started: ${outcome.heartbeat.reason}`);
    if (outcome.notDelivered) throw outcome.notDelivered;
  },
});
