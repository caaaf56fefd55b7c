import { createRequire } from 'node:module';
import type { Readable, Writable } from 'node:stream';
import type * as McpServerModule from '@modelcontextprotocol/sdk/server/mcp.js';
import type * as StdioModule from '@modelcontextprotocol/sdk/server/stdio.js';
import type * as ZodMini from 'zod/mini';
import type { MamConfig } from '../config/config.ts';
import type { Logger } from '../log.ts';
import type { Registry } from '../registry/registry.ts';
import type { Decision, DecisionWaiter } from './decision-waiter.ts';
import { askPermission } from './permission-request.ts';

/**
 * `mam mcp-permission`: the MCP stdio server that Claude Code consults in headless mode through
 * `--permission-prompt-tool mcp__mam__permission_prompt` (docs/agent-cli-facts.md §1.4). Server
 * `mam`, one tool `permission_prompt`: Claude calls it with `{tool_name, input, tool_use_id?}` when
 * no rule decided; it answers with one text block holding the JSON-stringified
 * `{"behavior":"allow","updatedInput":…}` or `{"behavior":"deny","message":…}`.
 */
export const MCP_SERVER_NAME = 'mam';
export const MCP_TOOL_NAME = 'permission_prompt';

export interface McpPermissionOptions {
  jobId: string;
  /** 0 waits for ever. */
  timeoutMs: number;
  version: string;
  expectDispatchToken?: string | undefined;
  expectAttemptId?: number | undefined;
  log: Logger;
  /** The MCP channel: stdout carries nothing else (logs go to stderr). */
  stdin: Readable;
  stdout: Writable;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM). */
  stop: Promise<unknown>;
}

/** The tool's arguments as Claude sends them; `input` is the tool's own input, any object. */
function permissionPromptArgs(z: typeof ZodMini) {
  return { tool_name: z.string(), input: z.record(z.string(), z.unknown()), tool_use_id: z.optional(z.string()) };
}

/**
 * The SDK is required from node_modules at run time, not bundled: with classic zod and ajv it is
 * ~850 KB, and bundled into `mam` it cost every verb of that bin ~40 ms of start-up (`mam hook` runs
 * on every agent hook). Its arguments' schema is built with the zod instance the SDK itself loads.
 */
function loadSdk(): { mcp: typeof McpServerModule; stdio: typeof StdioModule; z: typeof ZodMini } {
  const load = createRequire(import.meta.url);
  return {
    mcp: load('@modelcontextprotocol/sdk/server/mcp.js') as typeof McpServerModule,
    stdio: load('@modelcontextprotocol/sdk/server/stdio.js') as typeof StdioModule,
    z: load('zod/mini') as typeof ZodMini,
  };
}

/** Claude's permission-prompt result: the decision JSON-stringified in one text block. */
export function promptResult(decision: Decision, input: Record<string, unknown>): { content: Array<{ type: 'text'; text: string }> } {
  const body = decision.decision === 'allow' ? { behavior: 'allow', updatedInput: input } : { behavior: 'deny', message: decision.reason };
  return { content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/**
 * Serves until the client closes stdin or a stop signal arrives. One waiter (one subscription to the
 * job's control topic) serves every call, opened at the first call rather than at start, so that the
 * MCP handshake never waits for the broker; a waiter whose connection failed is replaced at the next
 * call. Any failure to ask is a deny, never an allow.
 */
export async function serveMcpPermission(config: MamConfig, registry: Registry, opts: McpPermissionOptions): Promise<void> {
  const { mcp, stdio, z } = loadSdk();
  const { DecisionWaiter } = await import('./decision-waiter.ts');
  const { log } = opts;
  let waiter: Promise<DecisionWaiter> | undefined;
  const waiterSource = async (): Promise<DecisionWaiter> => {
    const current = waiter ? await waiter.catch(() => undefined) : undefined;
    if (current && !current.broken) return current;
    if (current) void current.close();
    waiter = DecisionWaiter.open(config, registry, opts.jobId, { log });
    return waiter;
  };

  const server = new mcp.McpServer({ name: MCP_SERVER_NAME, version: opts.version });
  server.registerTool(
    MCP_TOOL_NAME,
    {
      title: 'Ask the MAM operator',
      description: 'Asks the operator of this MAM job, over the broker, whether a tool may run; answers allow or deny. Denies when no answer comes in time.',
      inputSchema: permissionPromptArgs(z),
    },
    async (args, extra) => {
      const input = args.input as Record<string, unknown>;
      let decision: Decision;
      try {
        decision = await askPermission(
          config,
          registry,
          {
            jobId: opts.jobId,
            tool: args.tool_name,
            input,
            toolUseId: args.tool_use_id,
            timeoutMs: opts.timeoutMs,
            expectDispatchToken: opts.expectDispatchToken,
            expectAttemptId: opts.expectAttemptId,
            // Claude cancelled the call: the answer would be dropped, so stop waiting for one.
            signal: extra.signal,
            log,
          },
          waiterSource,
        );
      } catch (err) {
        // A refused request (terminal job, stale attempt) or a broken registry: the tool must not run.
        log.error({ err: (err as Error).message, tool: args.tool_name }, 'permission request failed; denied');
        decision = { decision: 'deny', reason: `MAM could not ask for permission: ${(err as Error).message}`, by: 'broker_unreachable' };
      }
      log.info({ tool: args.tool_name, decision: decision.decision, by: decision.by }, 'permission answered');
      return promptResult(decision, input);
    },
  );

  const transport = new stdio.StdioServerTransport(opts.stdin, opts.stdout);
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    // The SDK's stdio transport does not watch for the end of its input: a client that goes away
    // (Claude exiting) only closes our stdin.
    opts.stdin.once('end', () => resolve());
    opts.stdin.once('close', () => resolve());
  });
  await server.connect(transport);
  await Promise.race([closed, opts.stop]);
  await server.close().catch(() => undefined);
  const current = waiter ? await waiter.catch(() => undefined) : undefined;
  await current?.close();
}
