import * as z from 'zod/mini';
import '../zod-messages.ts';
import { UsageError } from '../errors.ts';
import { isoMillisSchema } from '../timestamps.ts';
import { jobIdSchema } from '../vocabulary.ts';

/**
 * An agent session (issue 25): a long-lived agent in a tmux pane that takes job after job, one at a
 * time. `running`: its pane and agent are alive. `stopped`: stopped with its conversation kept, so
 * `mam session resume` can go on with it. `terminated`: stopped with the conversation purged, or its
 * pane (or agent) found dead. `archived`: written by the seed (the Python toolkit) for a retired
 * session; read and listed, never written by MAM.
 */
export const SESSION_STATES = ['running', 'stopped', 'terminated', 'archived'] as const;
export type SessionState = (typeof SESSION_STATES)[number];

/** The agents a session can host: those whose end of turn MAM learns from a hook, and a shell. */
export const SESSION_AGENTS = ['claude', 'codex', 'gemini', 'shell'] as const;
export type SessionAgent = (typeof SESSION_AGENTS)[number];

/**
 * Session names become file names and tmux session names: tmux turns `.` and `:` into `_`, so
 * neither is allowed; letters, digits, `_` and `-`, starting with a letter or digit, at most 48.
 */
export const SESSION_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$/;
export const sessionNameSchema = z.string().check(z.regex(SESSION_NAME_PATTERN, 'expected letters, digits, _ and - (at most 48, no leading - or _)'));

export function assertSessionName(name: string): string {
  if (!SESSION_NAME_PATTERN.test(name)) throw new UsageError(`session name must be letters, digits, _ and - (at most 48), got ${JSON.stringify(name)}`);
  return name;
}

/** One line of what last happened to a session, for `mam session list`. */
export const sessionEventSchema = z.looseObject({
  type: z.string(),
  at: isoMillisSchema,
  detail: z.optional(z.nullable(z.string())),
});
export type SessionEvent = z.infer<typeof sessionEventSchema>;

/**
 * `<registry>/sessions/<name>.json`. A loose object like the job record: fields a newer MAM (or the
 * seed) wrote survive a round trip. Fields MAM added after the first version are optional.
 */
export const sessionRecordSchema = z.looseObject({
  name: sessionNameSchema,
  agent: z.enum(SESSION_AGENTS),
  state: z.enum(SESSION_STATES),
  workdir: z.string(),
  created_at: isoMillisSchema,
  updated_at: isoMillisSchema,
  /**
   * Counts the session's launches (create, each resume). Every hook of a launch carries it, so a hook
   * of an agent that was stopped (or replaced) can no longer change the session.
   */
  generation: z.int().check(z.minimum(1)),
  /** The tmux session, its agent's pane and the pane's first process (the agent's process group). */
  tmux_session: z.nullable(z.string()),
  pane_id: z.nullable(z.string()),
  pane_pid: z.nullable(z.int()),
  /** The socket of the tmux server the pane is on: the attach line names it when it is not the default. */
  tmux_socket: z.optional(z.nullable(z.string())),
  /** The agent's own session id, from its SessionStart hook payload (`session_id`); what resume passes to the CLI. */
  agent_session_id: z.nullable(z.string()),
  /** Claude's `transcript_path` from the same payload: what `--purge-conversation` deletes. */
  transcript_path: z.optional(z.nullable(z.string())),
  /**
   * The agent waits for a prompt: learnt from its hooks (SessionStart, Stop, Notification
   * `idle_prompt`; for a shell, its last job's command ended), never from its screen. A delivery sets
   * it false under the session lock before it types, so two delegates cannot both deliver.
   */
  idle: z.boolean(),
  /** The job it holds (delivered, its turn not ended yet); null when none. */
  current_job: z.nullable(jobIdSchema),
  jobs_done: z.int().check(z.minimum(0)),
  last_event: z.nullable(sessionEventSchema),
  /** Why it was stopped or terminated. */
  detail: z.nullable(z.string()),
});
export type SessionRecord = z.infer<typeof sessionRecordSchema>;
