import type { JobStatus, LifecycleEvent } from '../vocabulary.ts';

/**
 * What the subscriber's decision core receives. Parsing, schema, topic, HMAC and attempt checks
 * (contract §4, "a message is accepted only if …") happen before a message gets here.
 */

export interface VerifiedEvent {
  kind: 'event';
  jobId: string;
  seq: number;
  event: LifecycleEvent;
  /** The payload as it should be printed. */
  payload: unknown;
  /** The payload's text when the wire carried it in its own compact form: the line to print as is (`WirePayload.compactText`). */
  wireText?: string | undefined;
  /** The payload's `timestamp` as sent (`YYYY-MM-DDTHH:MM:SSZ`), for the replay guard's bound. */
  timestamp?: string | undefined;
}

export interface VerifiedState {
  kind: 'state';
  jobId: string;
  seq: number;
  status: JobStatus;
  lastEvent: string;
  payload: unknown;
  /** As `VerifiedEvent.wireText`. */
  wireText?: string | undefined;
  retained: boolean;
}

export type VerifiedMessage = VerifiedEvent | VerifiedState;

/** One `--job` with its record's limits. A limit of 0 disables that clock. */
export interface WatchedJob {
  jobId: string;
  timeoutSec: number;
  idleTimeoutSec: number;
  ackTimeoutSec: number;
  /**
   * The record's `last_seq` when the watch starts: the baseline for `seq_gap`. Without it the first
   * accepted event sets the baseline, since a watch started mid-job cannot know what it missed.
   */
  lastSeq?: number;
}
