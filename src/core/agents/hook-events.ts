import * as z from 'zod/mini';
import { UsageError } from '../errors.ts';
import type { LifecycleEvent } from '../vocabulary.ts';
import { parseWireJson } from '../wire/canonical-json.ts';

/**
 * What an agent's hook (or MAM's own wrapper around an agent without hooks) says happened, as the
 * lifecycle event it stands for. The payload shapes are the documented ones (docs/agent-cli-facts.md;
 * recorded examples in test/fixtures/agents/). Pure: `mam hook` reads the input and publishes.
 */
export const HOOK_SOURCES = ['claude', 'codex', 'codex-notify', 'gemini', 'wrapper'] as const;
export type HookSource = (typeof HOOK_SOURCES)[number];

/** Where a source's input comes from: stdin (hooks), the last argument (Codex `notify`), or flags. */
export function hookInputChannel(from: HookSource): 'stdin' | 'argument' | 'flags' {
  return from === 'codex-notify' ? 'argument' : from === 'wrapper' ? 'flags' : 'stdin';
}

export type HookAction = { publish: LifecycleEvent; detail: string } | { skip: string };

const hookPayload = z.looseObject({ hook_event_name: z.string() });
const notifyPayload = z.looseObject({ type: z.string() });

/** How much of a CLI's own error text an `error` detail carries. */
const MAX_CLI_TEXT = 300;

/** One line of at most `max` characters (code points), with an ellipsis when cut. */
function oneLine(value: string, max: number): string {
  const chars = Array.from(value.replace(/\s+/g, ' ').trim());
  return chars.length <= max ? chars.join('') : `${chars.slice(0, max - 1).join('')}…`;
}

/** Strings of a payload, or undefined: a field of another type is treated as absent, not trusted. */
function text(payload: Record<string, unknown>, key: string): string | undefined {
  const value = payload[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function parseInput<T>(schema: z.ZodMiniType<T>, input: string, from: HookSource): T {
  let parsed: unknown;
  try {
    parsed = parseWireJson(input);
  } catch (err) {
    throw new UsageError(`mam hook --from ${from}: the input is not JSON (${(err as Error).message})`);
  }
  const result = schema.safeParse(parsed);
  if (!result.success) throw new UsageError(`mam hook --from ${from}: not a ${from} hook payload (${result.error.issues[0]?.message ?? 'invalid'})`);
  return result.data;
}

/** Claude Code hooks (SessionStart, Notification, Stop, StopFailure; SessionEnd is not relied on: claude-code#79702). */
function fromClaude(p: Record<string, unknown> & { hook_event_name: string }): HookAction {
  switch (p.hook_event_name) {
    case 'SessionStart':
      return { publish: 'started', detail: 'Claude Code session started' };
    case 'Notification':
      if (p.notification_type !== 'permission_prompt') return { skip: `notification ${String(p.notification_type ?? 'without a type')}` };
      return { publish: 'permission_required', detail: text(p, 'message') ?? 'Claude Code needs permission' };
    case 'PermissionRequest':
      return { publish: 'permission_required', detail: `Claude Code asks to use ${text(p, 'tool_name') ?? 'a tool'}` };
    case 'Stop':
      // Already continuing because a Stop hook said so: not the end yet.
      if (p.stop_hook_active === true) return { skip: 'stop hook already active' };
      return { publish: 'completed', detail: 'Claude Code finished' };
    case 'StopFailure': {
      // The CLI's own words (`last_assistant_message` is the API error as Claude shows it), so the
      // operator reads why without opening a transcript; the publisher scrubs paths and secrets.
      const said = text(p, 'last_assistant_message') ?? text(p, 'error_details');
      const kind = `Claude Code stopped on an API error (${text(p, 'error') ?? 'unknown'})`;
      return { publish: 'error', detail: said === undefined ? kind : `${kind}: ${oneLine(said, MAX_CLI_TEXT)}` };
    }
    default:
      return { skip: `${p.hook_event_name} is not reported` };
  }
}

/** Codex hooks (hooks.json / `-c hooks.*`): no Notification; PermissionRequest when it asks. */
function fromCodex(p: Record<string, unknown> & { hook_event_name: string }): HookAction {
  switch (p.hook_event_name) {
    case 'SessionStart':
      return { publish: 'started', detail: 'Codex session started' };
    case 'PermissionRequest':
      return { publish: 'permission_required', detail: `Codex asks to use ${text(p, 'tool_name') ?? 'a tool'}` };
    case 'Stop':
      if (p.stop_hook_active === true) return { skip: 'stop hook already active' };
      return { publish: 'completed', detail: 'Codex finished' };
    default:
      return { skip: `${p.hook_event_name} is not reported` };
  }
}

/** Gemini CLI hooks: AfterAgent is the end of its answer; Notification `ToolPermission` a prompt. */
function fromGemini(p: Record<string, unknown> & { hook_event_name: string }): HookAction {
  switch (p.hook_event_name) {
    case 'SessionStart':
      return { publish: 'started', detail: 'Gemini CLI session started' };
    case 'Notification':
      if (p.notification_type !== 'ToolPermission') return { skip: `notification ${String(p.notification_type ?? 'without a type')}` };
      return { publish: 'permission_required', detail: text(p, 'message') ?? 'Gemini CLI needs permission' };
    case 'AfterAgent':
      if (p.stop_hook_active === true) return { skip: 'stop hook already active' };
      return { publish: 'completed', detail: 'Gemini CLI finished' };
    default:
      return { skip: `${p.hook_event_name} is not reported` };
  }
}

export interface WrapperInput {
  on: 'start' | 'exit';
  exitCode?: number | undefined;
}

/** MAM's wrapper around an agent without hooks: `started` before it, the outcome by its exit code. */
function fromWrapper(input: WrapperInput): HookAction {
  if (input.on === 'start') return { publish: 'started', detail: 'Agent started' };
  if (input.exitCode === undefined) throw new UsageError('mam hook --from wrapper --on exit: --exit-code is required');
  return input.exitCode === 0 ? { publish: 'completed', detail: 'Agent finished' } : { publish: 'error', detail: `Agent exited with code ${input.exitCode}` };
}

/** The action for one hook call; `input` is the JSON text (stdin or argument) for every source but the wrapper. */
export function hookAction(from: HookSource, input: string, wrapper?: WrapperInput): HookAction {
  switch (from) {
    case 'claude':
      return fromClaude(parseInput(hookPayload, input, from));
    case 'codex':
      return fromCodex(parseInput(hookPayload, input, from));
    case 'gemini':
      return fromGemini(parseInput(hookPayload, input, from));
    case 'codex-notify': {
      const p = parseInput(notifyPayload, input, from);
      return p.type === 'agent-turn-complete' ? { publish: 'completed', detail: 'Codex finished its turn' } : { skip: `notify ${p.type} is not reported` };
    }
    case 'wrapper':
      if (wrapper === undefined) throw new UsageError('mam hook --from wrapper: --on start|exit is required');
      return fromWrapper(wrapper);
  }
}
