import { ExitCode } from '../errors.ts';
import type { LifecycleEvent, TerminalStatus } from './verified-message.ts';

/**
 * What the watch asks its adapter to do. Plain data, so the decision core performs no IO and
 * the adapter (MQTT client, registry, stdout) stays thin.
 */

/** How a job's line came to be printed (or a job resolved). */
export type WatchSource = 'event' | 'state' | 'disk' | 'operator';

/** Write `payload` as one line on stdout (compact JSON, or `--pretty`). */
export interface PrintAction {
  type: 'print';
  jobId: string;
  payload: unknown;
  via: WatchSource;
  /** The message's seq; null for a line from the registry. */
  seq: number | null;
  /** The lifecycle event for `via: 'event'` (what `--remote` mirrors into the record), else null. */
  event: LifecycleEvent | null;
}

export type AuditEntry =
  /** A seq already accepted for this attempt: QoS 1 may redeliver. */
  | { type: 'duplicate'; seq: number; event: LifecycleEvent }
  /** An accepted seq beyond last-seen + 1; the message is still accepted. */
  | { type: 'seq_gap'; seq: number; expected: number }
  /** An unseen event for a job that is already resolved: not printed. */
  | { type: 'ignored_after_terminal'; seq: number; event: LifecycleEvent; status: TerminalStatus };

/** Append `entry` to the job's `events.ndjson` (the adapter adds the timestamp). */
export interface AuditAction {
  type: 'audit';
  jobId: string;
  entry: AuditEntry;
}

export interface ResolvedAction {
  type: 'resolved';
  jobId: string;
  status: TerminalStatus;
  via: WatchSource;
}

export type WatchExitCode =
  | typeof ExitCode.ok
  | typeof ExitCode.failure
  | typeof ExitCode.notDelivered
  | typeof ExitCode.brokerDown;

export type ExitReason =
  | 'all_completed'
  | 'job_failed'
  | 'wall_timeout'
  | 'idle_timeout'
  | 'broker_unreachable'
  | 'stopped';

export type ClockKind = 'wall' | 'idle';

/** End the watch. Returned once; the watch returns nothing afterwards. */
export interface ExitAction {
  type: 'exit';
  code: WatchExitCode;
  reason: ExitReason;
  /** The job whose clock expired, for a timeout (also one met while the broker was unreachable). */
  jobId?: string;
  /** Which clock expired; absent when the first connection never succeeded. */
  expired?: ClockKind;
}

export type WatchAction = PrintAction | AuditAction | ResolvedAction | ExitAction;

/** Contract §1/§4: 0 when every watched job completed, 1 when any ended `error` or `cancelled`. */
export function outcomeOf(statuses: Iterable<TerminalStatus>): ExitAction {
  for (const status of statuses) {
    if (status !== 'completed') return { type: 'exit', code: ExitCode.failure, reason: 'job_failed' };
  }
  return { type: 'exit', code: ExitCode.ok, reason: 'all_completed' };
}

/** A wall or idle clock ran out: 2, or 3 when it ran out while the broker was unreachable. */
export function timeoutExit(jobId: string, expired: ClockKind, brokerReachable: boolean): ExitAction {
  if (!brokerReachable) return { type: 'exit', code: ExitCode.brokerDown, reason: 'broker_unreachable', jobId, expired };
  const reason = expired === 'wall' ? 'wall_timeout' : 'idle_timeout';
  return { type: 'exit', code: ExitCode.notDelivered, reason, jobId, expired };
}
