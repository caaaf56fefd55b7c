import * as z from 'zod/mini';
import { HOOK_SOURCES, hookInputChannel } from '../../core/agents/hook-events.ts';
import { UsageError } from '../../core/errors.ts';
import { sessionNameSchema } from '../../core/sessions/session-record.ts';

import { countFlag, dispatchTokenFlag, jobIdFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const hookOptions = z.object({
  from: z.enum(HOOK_SOURCES),
  job: z.optional(jobIdFlag),
  session: z.optional(sessionNameSchema),
  generation: z.optional(countFlag),
  attemptId: z.optional(countFlag),
  expectDispatchToken: z.optional(dispatchTokenFlag),
  payload: z.optional(z.string()),
  on: z.optional(z.enum(['start', 'exit'])),
  exitCode: z.optional(z.string().check(z.regex(/^\d{1,3}$/, 'expected an exit code (0–255)'))),
  registry: z.optional(z.string()),
});

/** Hook input is small; a runaway stdin is cut rather than read into memory whole. */
const MAX_HOOK_INPUT = 1024 * 1024;

export const hookCommand = defineCommand({
  name: 'hook',
  summary: "publish what an agent's hook reports (Claude Code, Codex, Gemini CLI) as the job's signed event",
  examples: [
    [
      "Claude Code's hooks (in the --settings file MAM writes): the payload arrives on stdin",
      '--from claude --job 3f2a9c1d --attempt-id 1 --expect-dispatch-token $MAM_DISPATCH_TOKEN',
    ],
    ['Codex notify: the payload is the last argument', '--from codex-notify --job 3f2a9c1d --payload \'{"type":"agent-turn-complete"}\''],
    ['a wrapped command: started before, the outcome by its exit code after', '--from wrapper --job 3f2a9c1d --on exit --exit-code 0'],
  ],
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--from <source>', HOOK_SOURCES.join(' | '))
      .option('--job <id>', 'job id (with --session: the job to report for, instead of the one the session holds)')
      .option('--session <name>', "a named session's hook (mam session): reports for the job it holds and tells the session (idle, its agent's session id)")
      .option('--generation <n>', 'with --session: the launch this hook belongs to (an earlier launch changes nothing)')
      .option('--attempt-id <n>', 'refuse unless this is the current attempt id')
      .option('--expect-dispatch-token <token>', 'refuse unless this is the current attempt')
      .option('--payload <json>', 'the hook JSON as an argument (Codex notify appends it last); else stdin')
      .option('--on <when>', 'with --from wrapper: start | exit')
      .option('--exit-code <n>', 'with --on exit: the agent command exit code'),
  parse(raw) {
    const opts = parseOptions(hookOptions, raw);
    if (opts.session === undefined && opts.job === undefined) throw new UsageError('--job or --session is required');
    if ((opts.session === undefined) !== (opts.generation === undefined)) throw new UsageError('--session and --generation go together');
    if ((opts.on !== undefined || opts.exitCode !== undefined) && opts.from !== 'wrapper')
      throw new UsageError('--on and --exit-code: only with --from wrapper');
    if (opts.payload !== undefined && hookInputChannel(opts.from) !== 'argument')
      throw new UsageError(`--payload: only with --from codex-notify (--from ${opts.from} reads stdin)`);
    return { ...opts, exitCode: opts.exitCode === undefined ? undefined : Number(opts.exitCode) };
  },
  async run(opts, ctx) {
    const config = ctx.config();
    const registry = ctx.registry();
    const [{ hookAction }, { publishHookAction }] = await Promise.all([
      import('../../core/agents/hook-events.ts'),
      import('../../core/agents/hook-publish.ts'),
    ]);
    const channel = hookInputChannel(opts.from);
    const input = channel === 'stdin' ? ctx.io.stdin.readAll(MAX_HOOK_INPUT, 'mam hook: the hook input') : channel === 'argument' ? (opts.payload ?? '') : '';
    const wrapper = opts.on === undefined ? undefined : { on: opts.on, exitCode: opts.exitCode };
    const fence = { attemptId: opts.attemptId, dispatchToken: opts.expectDispatchToken };
    let outcome: Awaited<ReturnType<typeof publishHookAction>>;
    let jobId = opts.job;
    if (opts.session !== undefined) {
      const [{ sessionHook, applySessionHook }, { SessionStore }] = await Promise.all([
        import('../../core/sessions/session-hooks.ts'),
        import('../../core/sessions/session-store.ts'),
      ]);
      const target = { name: opts.session, generation: opts.generation!, jobId: opts.job };
      const result = await applySessionHook(config, registry, new SessionStore(registry), target, sessionHook(opts.from, input, wrapper), fence);
      outcome = result;
      jobId = result.jobId ?? undefined;
    } else {
      outcome = await publishHookAction(config, registry, opts.job!, fence, hookAction(opts.from, input, wrapper));
    }
    // Nothing on stdout: Claude Code adds a SessionStart hook's stdout to the agent's context.
    if ('skipped' in outcome) {
      if (config.logLevel === 'debug' || config.logLevel === 'trace') ctx.warn(`job ${jobId ?? '-'}: hook skipped: ${outcome.skipped}`);
      return;
    }
    // Exit 2 would block the agent (a Stop hook's exit 2 keeps Claude going): the event is on disk,
    // and the heartbeat or the next event carries the news once the broker is back.
    if (outcome.notDelivered) ctx.warn(`job ${jobId}: ${outcome.published} recorded, not delivered yet (${outcome.notDelivered.message})`);
  },
});
