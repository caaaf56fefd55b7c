import * as z from 'zod/mini';
import { type DecisionKind, MAX_REASON_CHARS } from '../../core/control/decision.ts';
import { warnIfPublicSandbox } from '../context.ts';
import { countFlag, jobIdFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { type CommandSpec, defineCommand, registryOption } from '../program.ts';

const decideOptions = z.object({
  job: jobIdFlag,
  seq: z.optional(countFlag),
  // The wire's bound: a longer reason is refused here rather than cut on its way out.
  reason: z.optional(z.string().check(z.maxLength(MAX_REASON_CHARS, `expected at most ${MAX_REASON_CHARS} characters`))),
  attempts: z._default(countFlag, 3),
  registry: z.optional(z.string()),
});

/**
 * `mam approve` / `mam deny` (docs/permissions.md): answer a waiting `permission_required` with a
 * signed decision on the job's control topic. Exit 0 once the broker acknowledged it, 1 when no
 * request is waiting here, 2 when the broker did not acknowledge it, 5 on a terminal job, 66 for an
 * unknown job (src/cli/exit-codes.ts). Prints the decision sent, one JSON line.
 */
function decideCommand(name: 'approve' | 'deny', decision: DecisionKind): CommandSpec<never> {
  return defineCommand({
    name,
    summary: `${decision} a tool an agent asked permission for (a signed decision on the job's control topic)`,
    configure: (cmd) =>
      registryOption(cmd)
        .requiredOption('--job <id>', 'job id')
        .option('--seq <n>', 'seq of the permission_required event answered (default: the newest one waiting in this registry)')
        .option(
          '--reason <text>',
          `told to the agent (default "${decision === 'allow' ? 'approved' : 'denied'} by the operator"); paths and secrets are scrubbed`,
        )
        .option('--attempts <n>', 'delivery tries in total (default 3)'),
    parse: (raw) => parseOptions(decideOptions, raw),
    async run(opts, ctx) {
      const config = ctx.config();
      const registry = ctx.registry();
      await warnIfPublicSandbox(ctx);
      const [{ sendDecision }, { wireJson }] = await Promise.all([import('../../core/control/send-decision.ts'), import('../../core/wire/canonical-json.ts')]);
      const sent = await sendDecision(config, registry, {
        jobId: opts.job,
        decision,
        reason: opts.reason,
        requestSeq: opts.seq,
        attempts: opts.attempts,
      });
      ctx.io.out.write(`${wireJson(sent.payload)}\n`);
    },
  });
}

export const approveCommand = decideCommand('approve', 'allow');
export const denyCommand = decideCommand('deny', 'deny');
