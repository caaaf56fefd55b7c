import * as z from 'zod/mini';
import { warnIfPublicSandbox } from '../context.ts';
import { countFlag, dispatchTokenFlag, jobIdFlag, limitFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { VERSION, defineCommand, registryOption } from '../program.ts';

const mcpPermissionOptions = z.object({
  job: jobIdFlag,
  timeout: z._default(limitFlag, 300),
  expectDispatchToken: z.optional(dispatchTokenFlag),
  attemptId: z.optional(countFlag),
  registry: z.optional(z.string()),
});

/**
 * `mam mcp-permission --job ID`: the MCP stdio server behind Claude Code's
 * `--permission-prompt-tool mcp__mam__permission_prompt` (docs/permissions.md). Stdout is the MCP
 * channel and carries nothing else; logs and warnings go to stderr. Ends with 0 when the client
 * closes its stdin or on SIGINT/SIGTERM.
 */
export const mcpPermissionCommand = defineCommand({
  name: 'mcp-permission',
  summary: "MCP stdio server answering Claude's permission prompts with decisions from the broker",
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--job <id>', 'job id')
      .option('--timeout <sec>', 'deny a request nobody answered within this many seconds (default 300; 0: wait for ever)')
      .option('--expect-dispatch-token <token>', 'refuse requests unless this is the current attempt (redispatched jobs)')
      .option('--attempt-id <n>', 'refuse requests unless this is the current attempt id'),
  parse: (raw) => parseOptions(mcpPermissionOptions, raw),
  async run(opts, ctx) {
    const stop = ctx.stopSignal();
    const config = ctx.config();
    const registry = ctx.registry();
    // An unknown job ends here (exit 66), before Claude is told of a tool that could never ask.
    registry.read(opts.job);
    await warnIfPublicSandbox(ctx);
    const { serveMcpPermission } = await import('../../core/control/mcp-permission-server.ts');
    await serveMcpPermission(config, registry, {
      jobId: opts.job,
      timeoutMs: opts.timeout * 1000,
      version: VERSION,
      expectDispatchToken: opts.expectDispatchToken,
      expectAttemptId: opts.attemptId,
      log: await ctx.logger('mam-mcp-permission'),
      stdin: ctx.io.stdin.stream(),
      stdout: ctx.io.out.stream,
      stop,
    });
  },
});
