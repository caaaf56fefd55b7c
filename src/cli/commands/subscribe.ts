import * as z from 'zod/mini';
import { UsageError } from '../../core/errors.ts';
import { warnIfPublicSandbox } from '../context.ts';
import { watchExit } from '../exit-codes.ts';
import { jobIdFlag, limitFlag } from '../flags.ts';
import { expandNotifyTargets } from '../notify-targets.ts';
import { collect, parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const subscribeOptions = z.object({
  job: z._default(z.array(jobIdFlag), []),
  all: z.optional(z.boolean()),
  timeout: z.optional(limitFlag),
  idleTimeout: z.optional(limitFlag),
  ackTimeout: z.optional(limitFlag),
  remote: z.optional(z.boolean()),
  pretty: z.optional(z.boolean()),
  alerts: z.optional(z.boolean()),
  notify: z._default(z.array(z.string()), []),
  registry: z.optional(z.string()),
});

export const subscribeCommand = defineCommand({
  name: 'subscribe',
  summary: 'watch jobs; print accepted events as JSON lines; exit 0 completed, 1 error/cancelled, 2 timeout, 3 broker down',
  configure: (cmd) =>
    registryOption(cmd)
      .option('--job <id>', 'job to watch (repeatable)', collect)
      .option('--all', 'monitor every job under the topic root; never exits on a terminal')
      .option('--timeout <sec>', "wall-clock budget (default the job's timeout_sec; 0: none)")
      .option('--idle-timeout <sec>', "silence allowed since the last event (default the job's idle_timeout_sec; 0: none)")
      .option('--ack-timeout <sec>', "extra allowance before the first event (default the job's ack_timeout_sec)")
      .option('--remote', 'mirror started and terminal events into the local record')
      .option('--pretty', 'a human line per event instead of JSON')
      .option('--alerts', 'with --all: also print alert lines (stalled, failed, permission_waiting, agent_offline)')
      .option(
        '--notify <url>',
        'with --all: POST each alert to this webhook (repeatable; implies --alerts; slack:/discord: force a shape; @FILE: the URLs in a 0600 file, kept out of ps)',
        collect,
      ),
  parse(raw) {
    const opts = parseOptions(subscribeOptions, raw);
    if (opts.all && opts.job.length > 0) throw new UsageError('--all and --job are exclusive');
    if (!opts.all && opts.job.length === 0) throw new UsageError('--job <id> or --all is required');
    if ((opts.alerts || opts.notify.length > 0) && !opts.all) throw new UsageError('--alerts and --notify need --all');
    const notify = expandNotifyTargets(opts.notify);
    return { ...opts, notify, job: [...new Set(opts.job)], all: opts.all ?? false, alerts: (opts.alerts ?? false) || notify.length > 0 };
  },
  async run(opts, ctx) {
    const config = ctx.config();
    const registry = ctx.registry();
    await warnIfPublicSandbox(ctx);
    const [{ watch }, output] = await Promise.all([import('../../core/subscriber/subscriber.ts'), import('../../core/subscriber/output.ts')]);
    const log = await ctx.logger('mam-subscribe', { extraSecrets: opts.notify });
    // Alerts (docs/coordination-reference.md#alerts) are their own module fed by the watch's callbacks.
    const alerts = opts.alerts ? await (await import('../../core/fleet/alerts/alert-wiring.ts')).startAlerts(config, registry, log, opts) : undefined;
    const outcome = await watch(config, registry, {
      jobIds: opts.job,
      all: opts.all,
      flags: { timeoutSec: opts.timeout, idleTimeoutSec: opts.idleTimeout, ackTimeoutSec: opts.ackTimeout },
      remote: opts.remote ?? false,
      write: (text) => ctx.io.out.write(text),
      format: opts.pretty ? output.prettyLine : output.jsonLine,
      log,
      stopSignal: ctx.stopSignal(),
      onPrinted: alerts?.onPrinted,
      // Contract §4: always printed, whatever the log level; wrappers wait for it.
      onSubscribed: ({ watching, broker }) => ctx.io.err.write(`SUBSCRIBED ${watching} ${broker}\n`),
    });
    await alerts?.stop();
    const { line } = watchExit(outcome);
    if (line) ctx.io.err.write(`${line}\n`);
    return { kind: 'watch', watch: outcome };
  },
});
