/**
 * The failures of the core, by what went wrong, never by exit code: the core throws these and
 * returns outcomes; `src/cli/exit-codes.ts` is the one place that maps both to the contract's codes
 * and prints them. None of them carries a stack a user should see.
 */
export class MamError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad flag, bad value, bad job id, `--data` not an object. */
export class UsageError extends MamError {}

/** A registry folder, log file or `.mam.env` that others could write (or read, for secrets), or a symbolic link inside the registry. */
export class UnsafePlace extends UsageError {}

export class NoSuchJob extends MamError {
  constructor(readonly jobId: string) {
    super(`no such job: ${jobId}`);
  }
}

export class NothingPickable extends MamError {
  constructor(agentSession: string) {
    super(`nothing pickable for agent session ${agentSession}`);
  }
}

/** A transition the CAS engine will not commit (terminal job, stale token or attempt, barrier). */
export class TransitionRefused extends MamError {
  constructor(
    readonly jobId: string,
    readonly reason: string,
  ) {
    super(`refused: job ${jobId}: ${reason}`);
  }
}

/** A record on disk that does not parse or validate. It is named and never overwritten. */
export class CorruptRecord extends MamError {
  constructor(
    readonly path: string,
    why: string,
  ) {
    super(`${path}: corrupt job record (${why})`);
  }
}

/** A lock (the registry's, or a job's heartbeat lock) still held when the wait ran out. */
export class LockTimeout extends MamError {
  constructor(lockPath: string, what: string, waitedMs: number) {
    super(`${lockPath}: ${what} lock still held after ${Math.round(waitedMs / 1000)} s`);
  }
}

/** A lock taken away while held (a suspended machine, a clock jump, a folder removed). */
export class LockLost extends MamError {
  constructor(lockPath: string, what: string, why: string) {
    super(`${lockPath}: ${what} lock was lost while held (${why})`);
  }
}

/** The configuration (environment, `.mam.env`, a file it names) cannot be used. */
export class ConfigError extends MamError {}
