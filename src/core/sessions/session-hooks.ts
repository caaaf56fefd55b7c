import { readFileSync } from 'node:fs';
import { launchPaths } from '../agents/agent-launch.ts';
import { type HookAction, type HookSource, type WrapperInput, hookAction } from '../agents/hook-events.ts';
import { type HookFence, type HookOutcome, publishHookAction } from '../agents/hook-publish.ts';
import type { MamConfig } from '../config/config.ts';
import type { Registry } from '../registry/registry.ts';
import { parseWireJson } from '../wire/canonical-json.ts';
import type { SessionRecord } from './session-record.ts';
import { type SessionStore, sessionEvent } from './session-store.ts';

/**
 * What a hook of a session's agent means for the session (issue 25): it is ready (SessionStart,
 * with the agent's own session id), it took a prompt (the held job's `started`), its turn ended
 * (the held job's outcome, and the session is idle again), it waits for input (`idle_prompt`).
 * The session learns all of this from hooks, never from the pane's screen.
 */
export type SessionTurn = 'ready' | 'prompt' | 'end' | 'idle' | 'other';

export interface SessionHook {
  turn: SessionTurn;
  /** The event for the held job (or a skip). */
  action: HookAction;
  /** From a SessionStart payload: what `mam session resume` hands back to the CLI. */
  agentSessionId?: string | undefined;
  transcriptPath?: string | undefined;
  /**
   * Codex's notify: which thread's turn ended (`thread-id`) and the prompts it took
   * (`input-messages`). The TUI also notifies for a thread of its own that titles the conversation
   * after its first prompt (0.171: "Generate a concise, single-line task title … User prompt: …"),
   * which is not the session's turn: see foreignThread.
   */
  thread?: { id: string; inputs: string[] } | undefined;
}

const AGENT_NAMES: Record<string, string> = { claude: 'Claude Code', codex: 'Codex', gemini: 'Gemini CLI' };

function payloadOf(input: string): Record<string, unknown> {
  try {
    const parsed = parseWireJson(input);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const text = (p: Record<string, unknown>, key: string) => (typeof p[key] === 'string' && p[key] !== '' ? (p[key] as string) : undefined);

/**
 * The meaning of one hook call for a session. The job's event is the one `mam hook --job` would
 * publish (hook-events.ts), except for the two that differ when one agent takes many jobs:
 * SessionStart is the session's start, not a job's (nothing is published), and UserPromptSubmit is
 * when the held job starts. Bad input is refused by hookAction exactly as for a job's hook.
 */
export function sessionHook(from: HookSource, input: string, wrapper?: WrapperInput): SessionHook {
  if (from === 'wrapper') {
    const action = hookAction(from, input, wrapper);
    return { turn: wrapper?.on === 'start' ? 'prompt' : 'end', action };
  }
  const action = hookAction(from, input);
  if (from === 'codex-notify') {
    const p = payloadOf(input);
    const id = text(p, 'thread-id');
    const inputs = Array.isArray(p['input-messages']) ? p['input-messages'].filter((m): m is string => typeof m === 'string') : [];
    return { turn: 'publish' in action ? 'end' : 'other', action, ...(id === undefined ? {} : { thread: { id, inputs } }) };
  }
  const p = payloadOf(input);
  const who = AGENT_NAMES[from] ?? from;
  switch (p.hook_event_name) {
    case 'SessionStart':
      return {
        turn: 'ready',
        action: { skip: 'a session start is not a job event' },
        agentSessionId: text(p, 'session_id'),
        transcriptPath: text(p, 'transcript_path'),
      };
    case 'UserPromptSubmit':
    case 'BeforeAgent':
      return { turn: 'prompt', action: { publish: 'started', detail: `${who} took the prompt` } };
    case 'Stop':
    case 'StopFailure':
    case 'AfterAgent':
      return { turn: 'publish' in action ? 'end' : 'other', action };
    case 'Notification':
      return { turn: p.notification_type === 'idle_prompt' ? 'idle' : 'other', action };
    default:
      return { turn: 'other', action };
  }
}

export type SessionHookOutcome = (HookOutcome | { skipped: string }) & { jobId: string | null };

/**
 * Publishes the held job's event (if any), then updates the session under its lock. The session
 * part runs even when the publish is refused or fails: a turn that ended has ended, and a session
 * left busy would take no more jobs. A hook of another generation (an agent stopped or replaced
 * since) changes nothing and publishes nothing.
 */
export async function applySessionHook(
  config: MamConfig,
  registry: Registry,
  store: SessionStore,
  target: { name: string; generation: number; jobId?: string | undefined },
  hook: SessionHook,
  fence: HookFence = {},
): Promise<SessionHookOutcome> {
  const seen = store.read(target.name);
  if (seen.generation !== target.generation) return { skipped: `session ${target.name} was relaunched since (generation ${seen.generation})`, jobId: null };
  const jobId = target.jobId ?? seen.current_job;
  const foreign = hook.thread && foreignThread(registry, seen, jobId, hook.thread);
  if (foreign) return { skipped: foreign, jobId };
  try {
    if (jobId === null || !('publish' in hook.action)) return { skipped: 'skip' in hook.action ? hook.action.skip : 'the session holds no job', jobId };
    return { ...(await publishHookAction(config, registry, jobId, fence, hook.action)), jobId };
  } finally {
    await store.update(target.name, (r) => nextSessionState(r, target.generation, jobId, hook));
  }
}

/**
 * Why a Codex notify is not the end of the session's turn, or undefined when it is: once the session
 * knows its conversation's id, only that thread's notify counts; before (the first turn of a fresh
 * Codex, or after `resume --last`), only one whose `input-messages` hold the very prompt MAM typed
 * for the held job (its prompt file) — the title thread quotes that prompt inside its own.
 */
export function foreignThread(registry: Registry, seen: SessionRecord, jobId: string | null, thread: { id: string; inputs: string[] }): string | undefined {
  if (seen.agent_session_id !== null)
    return thread.id === seen.agent_session_id ? undefined : `notify of thread ${thread.id}, not of the session's ${seen.agent_session_id}`;
  if (jobId === null) return `notify of thread ${thread.id} while the session holds no job`;
  let prompt: string;
  try {
    prompt = readFileSync(launchPaths(registry, jobId).promptFile, 'utf8').trim();
  } catch {
    return `notify of thread ${thread.id}: job ${jobId} has no prompt file to match`;
  }
  return thread.inputs.some((m) => m.trim() === prompt) ? undefined : `notify of thread ${thread.id} for a prompt MAM did not type (Codex's title thread)`;
}

/** The session after a hook; undefined when the hook changes nothing. */
export function nextSessionState(r: SessionRecord, generation: number, jobId: string | null, hook: SessionHook): SessionRecord | undefined {
  if (r.generation !== generation || r.state !== 'running') return undefined;
  switch (hook.turn) {
    case 'ready':
      return {
        ...r,
        agent_session_id: hook.agentSessionId ?? r.agent_session_id,
        transcript_path: hook.transcriptPath ?? r.transcript_path ?? null,
        idle: r.current_job === null ? true : r.idle,
        last_event: sessionEvent('agent_ready', hook.agentSessionId ?? null),
      };
    case 'prompt':
      return { ...r, last_event: sessionEvent('turn_started', jobId) };
    case 'end': {
      // Only the end of the held job's turn frees the session: a late hook of an earlier job does not.
      if (r.current_job !== null && r.current_job !== jobId) return undefined;
      const held = r.current_job !== null;
      // Codex's notify names its thread: the conversation `codex resume <id>` goes on with.
      const id = hook.thread ? { agent_session_id: r.agent_session_id ?? hook.thread.id } : {};
      return { ...r, ...id, idle: true, current_job: null, jobs_done: r.jobs_done + (held ? 1 : 0), last_event: sessionEvent('turn_ended', jobId) };
    }
    case 'idle':
      return r.current_job === null && !r.idle ? { ...r, idle: true, last_event: sessionEvent('agent_idle') } : undefined;
    case 'other':
      return undefined;
  }
}
