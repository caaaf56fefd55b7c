/**
 * What a scripted model answers, turn by turn: the same scenario drives the Anthropic, OpenAI and
 * Gemini servers (one module per API), so that each real agent CLI is put through the same story.
 * A turn is one request of the agent's main loop; requests a CLI makes on the side (Gemini's router)
 * are answered by the server of that API and do not use up a turn.
 */
export type Turn =
  /** A final answer: the CLI ends its turn (Claude's Stop, Codex's notify, Gemini's AfterAgent). */
  | { text: string }
  /**
   * One shell tool call (Claude `Bash`, Codex `exec_command`, Gemini `run_shell_command`). `command`
   * may be computed from the prompt the agent was given (the preamble's publish lines).
   */
  | { shell: string | ((prompt: string) => string) }
  /**
   * The API fails this request (and its retries): `overloaded` (Anthropic 529, HTTP 503 elsewhere),
   * `bad_request` (400), `server_error` (500, which the CLIs retry with backoff).
   */
  | { error: ApiError }
  /** The request is accepted and never answered (the response stays open until the server closes). */
  | { hang: true };

export type Scenario = readonly Turn[];

export type ApiError = 'overloaded' | 'bad_request' | 'server_error';

/** The text of an API error, as the servers send it: the CLIs quote it back, and the tests look for it. */
export const ERROR_TEXT = {
  overloaded: 'scripted model: overloaded, try later',
  bad_request: 'scripted model: this request is refused (scenario bad_request)',
  server_error: 'scripted model: internal error (scenario server_error)',
} as const satisfies Record<ApiError, string>;

/**
 * The preamble's command for `event` (assets/agent-preamble.md), as an obedient agent runs it:
 * found in the prompt, its `"<placeholder>"` detail filled with `detail`.
 */
export function preambleCommand(prompt: string, event: string, detail = 'scripted step'): string {
  const line = prompt.split('\n').find((l) => l.includes(`--event ${event} `));
  if (line === undefined) throw new Error(`the prompt has no preamble line for --event ${event}`);
  return line.trim().replace(/"<[^>]*>"/, JSON.stringify(detail));
}

/** The turn to play for the agent's `index`-th main request; past the end, a plain final answer. */
export function turnAt(scenario: Scenario, index: number): Turn {
  return scenario[index] ?? { text: 'Nothing more to do.' };
}

/** A shell turn's command for this request's prompt. */
export const shellCommand = (turn: Extract<Turn, { shell: unknown }>, prompt: string): string =>
  typeof turn.shell === 'string' ? turn.shell : turn.shell(prompt);
