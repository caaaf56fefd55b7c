/**
 * Typed failures of the core. The core never ends the process: it throws one of these, and
 * `runMain` (src/cli/run-main.ts) turns it into one line on stderr and the contract's exit code.
 */
export const ExitCode = {
  ok: 0,
  failure: 1,
  notDelivered: 2, // publisher: on disk, not acknowledged; subscriber: timeout
  brokerDown: 3,
  nothingPickable: 4,
  refused: 5,
  usage: 64,
  noSuchJob: 66,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export class MamError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = ExitCode.failure,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad flag, bad value, bad job id, `--data` not an object: exit 64. */
export class UsageError extends MamError {
  constructor(message: string) {
    super(message, ExitCode.usage);
  }
}

export class NoSuchJob extends MamError {
  constructor(readonly jobId: string) {
    super(`no such job: ${jobId}`, ExitCode.noSuchJob);
  }
}

export class NothingPickable extends MamError {
  constructor(agentSession: string) {
    super(`nothing pickable for agent session ${agentSession}`, ExitCode.nothingPickable);
  }
}

/** A transition the CAS engine will not commit (terminal job, stale token or attempt, barrier). */
export class TransitionRefused extends MamError {
  constructor(
    readonly jobId: string,
    readonly reason: string,
  ) {
    super(`refused: job ${jobId}: ${reason}`, ExitCode.refused);
  }
}

/** A record on disk that does not parse or validate. It is named and never overwritten. */
export class CorruptRecord extends MamError {
  constructor(
    readonly path: string,
    why: string,
  ) {
    super(`${path}: corrupt job record (${why})`, ExitCode.failure);
  }
}

export class RegistryLockTimeout extends MamError {
  constructor(lockPath: string, waitedMs: number) {
    super(`${lockPath}: registry lock still held after ${Math.round(waitedMs / 1000)} s`, ExitCode.failure);
  }
}

export class ConfigError extends MamError {}
