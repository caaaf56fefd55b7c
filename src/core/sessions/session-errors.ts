import { MamError } from '../errors.ts';

/**
 * The failures of session operations, apart from the code that raises them: the exit-code map
 * (src/cli/exit-codes.ts), which every command loads, imports these and nothing heavier.
 */

/** No record of that session (exit 66, as a job that does not exist). */
export class NoSuchSession extends MamError {
  constructor(readonly session: string) {
    super(`no such session: ${session}`);
  }
}

/** What a session's state forbids (create over a live one, resume of a purged one…): exit 5. */
export class SessionRefused extends MamError {
  constructor(
    readonly session: string,
    why: string,
  ) {
    super(`refused: session ${session}: ${why}`);
  }
}

/**
 * The job could not be handed to the session, and never reached it: `session_busy` (the idle
 * handshake did not succeed in time) or `session_not_running` (stopped, terminated, its pane dead).
 * The delegate closes the job `cancelled` with that detail and exits 5, so an orchestrator can
 * schedule it again without fear of running it twice.
 */
export class SessionUnavailable extends MamError {
  constructor(
    readonly reason: 'session_busy' | 'session_not_running',
    message: string,
  ) {
    super(message);
  }
}
