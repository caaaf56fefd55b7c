import type { LifecycleEvent, TerminalStatus } from '../vocabulary.ts';

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
  /** `payload`'s compact JSON when the wire carried exactly that (`VerifiedEvent.wireText`): printed without writing it again. */
  wireText?: string | undefined;
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
  | { type: 'ignored_after_terminal'; seq: number; event: LifecycleEvent; status: TerminalStatus }
  /** A genuine but old non-terminal event sent again (src/core/subscriber/replay-guard.ts): not printed, no liveness. */
  | { type: 'rejected'; reason: 'replayed'; seq: number; event: LifecycleEvent; detail: string }
  /** An accepted event stamped far from this host's time: evidence only, the timestamp decides nothing (contract §3). */
  | { type: 'stale_timestamp'; seq: number; event: LifecycleEvent; detail: string };

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

/**
 * Why a watch ended. The decision core returns the reason, never an exit code: what a reason means
 * for a process is src/cli/exit-codes.ts's business, and `mam delegate` reads the reason itself.
 */
export type ExitReason =
  /** Every watched job completed. */
  | 'all_completed'
  /** Every watched job is resolved, and one ended `error` or `cancelled`. */
  | 'job_failed'
  | 'wall_timeout'
  | 'idle_timeout'
  /** The broker could not be reached in time (first connection, or a clock ran out while cut off). */
  | 'broker_unreachable'
  /** SIGINT/SIGTERM, or the program that runs the watch ended it. */
  | 'stopped';

export type ClockKind = 'wall' | 'idle';

/** End the watch. Returned once; the watch returns nothing afterwards. */
export interface ExitAction {
  type: 'exit';
  reason: ExitReason;
  /** The job whose clock expired, for a timeout (also one met while the broker was unreachable). */
  jobId?: string;
  /** Which clock expired; absent when the first connection never succeeded. */
  expired?: ClockKind;
}

export type WatchAction = PrintAction | AuditAction | ResolvedAction | ExitAction;

/** Contract §1/§4: success when every watched job completed, failure when any ended `error` or `cancelled`. */
export function outcomeOf(statuses: Iterable<TerminalStatus>): ExitAction {
  for (const status of statuses) {
    if (status !== 'completed') return { type: 'exit', reason: 'job_failed' };
  }
  return { type: 'exit', reason: 'all_completed' };
}

/** A wall or idle clock ran out; while the broker was unreachable, that is what ended the watch (contract §4). */
export function timeoutExit(jobId: string, expired: ClockKind, brokerReachable: boolean): ExitAction {
  if (!brokerReachable) return { type: 'exit', reason: 'broker_unreachable', jobId, expired };
  return { type: 'exit', reason: expired === 'wall' ? 'wall_timeout' : 'idle_timeout', jobId, expired };
}
