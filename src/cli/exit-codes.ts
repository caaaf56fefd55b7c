import { CommanderError } from 'commander';
import { isTrueText } from '../core/config/text-values.ts';
import type { DelegationOutcome } from '../core/delegate/delegation.ts';
import { NoSuchJob, NothingPickable, TransitionRefused, UsageError } from '../core/errors.ts';
import { BrokerError } from '../core/mqtt/broker-errors.ts';
import { NotDelivered } from '../core/publisher/not-delivered.ts';
import type { RunnerOutcome } from '../core/remote/runner.ts';
import { NoSuchSession, SessionRefused, SessionUnavailable } from '../core/sessions/session-errors.ts';
import type { WatchOutcome } from '../core/subscriber/subscriber.ts';

/**
 * The one place that knows the contract's exit codes (docs/contract.md §1): the core throws domain errors and
 * returns outcomes, and every command's result passes through here on its way out.
 */
export const ExitCode = {
  ok: 0,
  failure: 1,
  /** Publisher: on disk, not acknowledged by the broker. Subscriber: a wall or idle timeout. */
  notDelivered: 2,
  brokerDown: 3,
  nothingPickable: 4,
  /** `mam claim`: another claimant holds the turn. */
  claimLost: 4,
  /** `mam roundtable counsel`: no invitation names this agent. */
  notInvited: 4,
  /** Also `mam delegate --session`: the session was busy or not running, the job closed `cancelled` undelivered. */
  refused: 5,
  /** `mam mentions`: the message is addressed to other agents; say nothing. */
  silent: 6,
  usage: 64,
  noSuchJob: 66,
  /** `mam session stop|resume` and `mam delegate --session`: no such session. */
  noSuchSession: 66,
  /** `mam roundtable show`: no invitation on the turn. */
  noRoundtable: 66,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * What a command ended with, when not simply done (a command that returns nothing exits 0) and not
 * a thrown error (`exitCodeOf`). Commands name what happened; `outcomeExit` alone knows the codes.
 */
export type CommandOutcome =
  | { kind: 'done' }
  | { kind: 'watch'; watch: WatchOutcome }
  | { kind: 'delegation'; delegation: DelegationOutcome }
  | { kind: 'runner'; runner: RunnerOutcome }
  /** `mam claim`: the turn is this claimant's, or another's. */
  | { kind: 'claim'; won: boolean }
  /** `mam mentions`: answer, say nothing, or the turn race was lost. */
  | { kind: 'mention'; action: 'respond' | 'silent' | 'lost' }
  /** `mam roundtable counsel`. */
  | { kind: 'counsel'; result: 'given' | 'already_given' | 'not_invited' }
  /** `mam roundtable show`. */
  | { kind: 'roundtable'; found: boolean }
  /** `mam doctor`: every check passed, or not. */
  | { kind: 'doctor'; allWell: boolean };

/** The one table from a command's outcome to its exit code (docs/contract.md §1). */
export function outcomeExit(outcome: CommandOutcome): ExitCode {
  switch (outcome.kind) {
    case 'done':
      return ExitCode.ok;
    case 'watch':
      return watchExit(outcome.watch).code;
    case 'delegation':
      return delegationExit(outcome.delegation);
    case 'runner':
      return runnerExit(outcome.runner);
    case 'claim':
      return outcome.won ? ExitCode.ok : ExitCode.claimLost;
    case 'mention':
      return outcome.action === 'respond' ? ExitCode.ok : outcome.action === 'silent' ? ExitCode.silent : ExitCode.claimLost;
    case 'counsel':
      return outcome.result === 'given' ? ExitCode.ok : outcome.result === 'already_given' ? ExitCode.refused : ExitCode.notInvited;
    case 'roundtable':
      return outcome.found ? ExitCode.ok : ExitCode.noRoundtable;
    case 'doctor':
      return outcome.allWell ? ExitCode.ok : ExitCode.failure;
  }
}

/** A thrown error's code. A broker failure that escapes a command is a delivery that did not happen: 2. */
export function exitCodeOf(err: unknown): ExitCode {
  if (err instanceof CommanderError) {
    return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? ExitCode.ok : ExitCode.usage;
  }
  if (err instanceof UsageError) return ExitCode.usage;
  if (err instanceof NoSuchJob) return ExitCode.noSuchJob;
  if (err instanceof NoSuchSession) return ExitCode.noSuchSession;
  if (err instanceof SessionRefused || err instanceof SessionUnavailable) return ExitCode.refused;
  if (err instanceof NothingPickable) return ExitCode.nothingPickable;
  if (err instanceof TransitionRefused) return ExitCode.refused;
  if (err instanceof NotDelivered || err instanceof BrokerError) return ExitCode.notDelivered;
  return ExitCode.failure;
}

/**
 * One line on stderr for a failure (contract §1), a stack only with MAM_DEBUG=1. Commander has
 * printed its own usage line already.
 */
export function reportError(err: unknown, stderr: (text: string) => void, env: NodeJS.ProcessEnv = process.env): ExitCode {
  const code = exitCodeOf(err);
  if (err instanceof CommanderError) return code;
  const message = err instanceof Error ? err.message : String(err);
  stderr(`ERROR: ${message.split('\n')[0]}\n`);
  if (isTrueText(env.MAM_DEBUG) && err instanceof Error && err.stack) stderr(`${err.stack}\n`);
  return code;
}

/** A watch's end (contract §4): the code, and the line that tells a person why, if any. */
export function watchExit(outcome: WatchOutcome): { code: ExitCode; line?: string } {
  switch (outcome.reason) {
    case 'all_completed':
      return { code: ExitCode.ok };
    case 'job_failed':
      return { code: ExitCode.failure };
    case 'stopped':
      // A monitor ends with 0 (contract §4); an interrupted --job watch has no outcome, and a
      // script must not read it as a success.
      return { code: outcome.monitor ? ExitCode.ok : ExitCode.failure };
    case 'wall_timeout':
    case 'idle_timeout':
      return { code: ExitCode.notDelivered, line: `job ${outcome.jobId}: ${outcome.reason === 'wall_timeout' ? 'wall-clock' : 'idle'} timeout` };
    case 'broker_unreachable':
      return { code: ExitCode.brokerDown, line: `ERROR: broker ${outcome.broker} unreachable; unresolved: ${outcome.unresolved.join(', ')}` };
    case 'broker_refused':
      return { code: ExitCode.brokerDown, line: `ERROR: ${outcome.failure?.message ?? `broker ${outcome.broker} refused the connection`}` };
  }
}

/** `mam delegate` (contract §1): 0 completed, 1 error/blocked/cancelled, 2 timeout, 3 broker. */
export function delegationExit(outcome: DelegationOutcome): ExitCode {
  switch (outcome.end) {
    case 'completed':
      return ExitCode.ok;
    case 'deadline_timeout':
      return ExitCode.notDelivered;
    case 'broker_unreachable':
      return ExitCode.brokerDown;
    case 'session_busy':
    case 'session_not_running':
      return ExitCode.refused;
    default:
      return ExitCode.failure;
  }
}

/** `mam-remote run --once`: 0 when the job completed, else 1; a runner stopped by a signal: 0. */
export function runnerExit(outcome: RunnerOutcome): ExitCode {
  return outcome === 'failed' ? ExitCode.failure : ExitCode.ok;
}
