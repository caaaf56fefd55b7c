import { type CloseRequest, type JobStatus, type LifecycleEvent, isTerminalStatus, statusOfCloseRequest, terminalStatusOf } from '../vocabulary.ts';
import type { JobRecord } from './job-record.ts';

/** Proof that a request belongs to the current attempt (dispatch-token fencing, contract §2). */
export interface AttemptFence {
  dispatchToken?: string | undefined;
  attemptId?: number | undefined;
}

export type TransitionRequest =
  | { kind: 'pick'; agentSession: string }
  /** An agent's event: allocates the next seq. */
  | ({ kind: 'event'; event: LifecycleEvent } & AttemptFence)
  /** A verified remote event copied into this registry (`mam-subscribe --remote`): keeps its seq. */
  | ({ kind: 'mirror'; event: LifecycleEvent; seq: number } & AttemptFence)
  /** `detail` defaults to the request (`mam delegate` closes `error` with `agent_blocked`). */
  | { kind: 'close'; request: CloseRequest; detail?: string | undefined }
  | { kind: 'redispatch'; dispatchToken: string };

export type TransitionResult = { outcome: 'commit'; next: JobRecord; from: JobStatus; seq?: number } | { outcome: 'refused'; reason: string };

const refuse = (reason: string): TransitionResult => ({ outcome: 'refused', reason });

function fenceProblem(record: JobRecord, fence: AttemptFence): string | undefined {
  if (fence.dispatchToken !== undefined && fence.dispatchToken !== record.dispatch_token) return 'stale dispatch token';
  if (fence.attemptId !== undefined && fence.attemptId !== record.attempt_id) {
    return `stale attempt ${fence.attemptId} (current attempt is ${record.attempt_id})`;
  }
  return undefined;
}

function statusAfterEvent(status: JobStatus, event: LifecycleEvent): JobStatus {
  const terminal = terminalStatusOf(event);
  if (terminal) return terminal;
  if (event === 'started' && status === 'pending') return 'running';
  return status;
}

/**
 * The compare-and-set table of contract §2, as a pure function of the record as read under the
 * registry lock. A terminal status never changes again except by redispatch; once a job has been
 * redispatched (attempt_id > 1), an agent's terminal event must prove it belongs to the current
 * attempt, so that a slow agent of an earlier attempt cannot end the new one.
 */
export function planTransition(record: JobRecord, request: TransitionRequest, now: string): TransitionResult {
  const from = record.status;
  const commit = (patch: Partial<JobRecord>, seq?: number): TransitionResult => {
    const statusChanged = patch.status !== undefined && patch.status !== from;
    const next: JobRecord = {
      ...record,
      ...patch,
      updated_at: now,
      transition_seq: record.transition_seq + (statusChanged || request.kind === 'redispatch' ? 1 : 0),
    };
    return seq === undefined ? { outcome: 'commit', next, from } : { outcome: 'commit', next, from, seq };
  };

  switch (request.kind) {
    case 'redispatch':
      return commit({
        status: 'pending',
        attempt_id: record.attempt_id + 1,
        dispatch_token: request.dispatchToken,
        detail: null,
        agent_session: record.registered_session === undefined ? record.agent_session : record.registered_session,
      });
    case 'pick':
      if (from !== 'pending') return refuse(`job is ${from}, not pending`);
      return commit({ status: 'running', agent_session: request.agentSession });
    case 'close': {
      if (isTerminalStatus(from)) return refuse(`job is already ${from}`);
      return commit({ status: statusOfCloseRequest(request.request), detail: request.detail ?? request.request });
    }
    case 'event':
    case 'mirror': {
      if (isTerminalStatus(from)) return refuse(`job is already ${from}`);
      const stale = fenceProblem(record, request);
      if (stale) return refuse(stale);
      const terminal = terminalStatusOf(request.event) !== null;
      const fenced = request.dispatchToken !== undefined || request.attemptId !== undefined;
      if (terminal && record.attempt_id > 1 && !fenced) {
        return refuse(`attempt ${record.attempt_id}: a terminal event must carry the current dispatch token or attempt id`);
      }
      const status = statusAfterEvent(from, request.event);
      if (request.kind === 'mirror') return commit({ status, last_seq: Math.max(record.last_seq, request.seq) });
      const seq = record.last_seq + 1;
      return commit({ status, last_seq: seq }, seq);
    }
  }
}
