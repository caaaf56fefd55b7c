import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../../src/core/registry/job-record.ts';
import { type TransitionRequest, type TransitionResult, planTransition } from '../../../src/core/registry/transitions.ts';
import { type CloseRequest, JOB_STATUSES, type JobStatus, type LifecycleEvent, isTerminalStatus } from '../../../src/core/vocabulary.ts';

const NOW = '2030-01-02T03:04:05.678Z';
const TOKEN = 'a'.repeat(32);
const NEW_TOKEN = 'b'.repeat(32);
const EVENTS: LifecycleEvent[] = ['started', 'progress', 'permission_required', 'completed', 'error'];
const CLOSES: CloseRequest[] = ['cancelled', 'deadline_timeout', 'completed', 'error'];

function record(status: JobStatus, patch: Partial<JobRecord> = {}): JobRecord {
  return {
    job_id: '0123abcd',
    status,
    created_at: '2030-01-01T00:00:00.000Z',
    updated_at: '2030-01-01T00:00:00.000Z',
    agent_session: null,
    brief: 'do it',
    last_seq: 5,
    auth_token: 'x'.repeat(43),
    dispatch_token: TOKEN,
    attempt_id: 1,
    transition_seq: 3,
    heartbeat_sec: 30,
    heartbeat_misses: 4,
    ack_timeout_sec: 180,
    idle_timeout_sec: 120,
    timeout_sec: 3600,
    transport: 'herdr',
    depends_on: [],
    detail: null,
    ...patch,
  };
}

function committed(result: TransitionResult): Extract<TransitionResult, { outcome: 'commit' }> {
  if (result.outcome !== 'commit') throw new Error(`expected a commit, got refused: ${result.reason}`);
  return result;
}

function refusedReason(result: TransitionResult): string {
  if (result.outcome !== 'refused') throw new Error(`expected a refusal, got ${result.next.status}`);
  return result.reason;
}

const plan = (status: JobStatus, request: TransitionRequest, patch: Partial<JobRecord> = {}) => planTransition(record(status, patch), request, NOW);

/** What each request makes of each status: the next status, or null when refused (contract §2). */
function expectedStatus(from: JobStatus, request: TransitionRequest): JobStatus | null {
  if (request.kind === 'redispatch') return 'pending';
  if (isTerminalStatus(from)) return null;
  switch (request.kind) {
    case 'pick':
      return from === 'pending' ? 'running' : null;
    case 'close':
      return request.request === 'deadline_timeout' ? 'error' : request.request;
    case 'event':
    case 'mirror':
      if (request.event === 'completed' || request.event === 'error') return request.event;
      return request.event === 'started' ? 'running' : from;
  }
}

const ALL_REQUESTS: TransitionRequest[] = [
  { kind: 'pick', agentSession: 'S' },
  ...EVENTS.map((event): TransitionRequest => ({ kind: 'event', event })),
  ...EVENTS.map((event): TransitionRequest => ({ kind: 'mirror', event, seq: 9 })),
  ...CLOSES.map((request): TransitionRequest => ({ kind: 'close', request })),
  { kind: 'redispatch', dispatchToken: NEW_TOKEN },
];

describe('planTransition: the whole table (status × request)', () => {
  const cases = JOB_STATUSES.flatMap((from) => ALL_REQUESTS.map((request) => [from, JSON.stringify(request), request] as const));

  it.each(cases)('%s + %s', (from, _label, request) => {
    const before = record(from);
    const frozen = structuredClone(before);
    const result = planTransition(before, request, NOW);
    expect(before).toEqual(frozen); // pure: the record read under the lock is not touched
    const want = expectedStatus(from, request);
    if (want === null) {
      expect(result.outcome).toBe('refused');
      return;
    }
    const { next, from: reportedFrom } = committed(result);
    expect(reportedFrom).toBe(from);
    expect(next.status).toBe(want);
    expect(next.updated_at).toBe(NOW);
    const statusChanged = want !== from;
    expect(next.transition_seq).toBe(before.transition_seq + (statusChanged || request.kind === 'redispatch' ? 1 : 0));
  });

  it('pick: only from pending; records the picking session', () => {
    const { next } = committed(plan('pending', { kind: 'pick', agentSession: 'S1' }));
    expect(next).toMatchObject({ status: 'running', agent_session: 'S1', transition_seq: 4, last_seq: 5 });
    expect(refusedReason(plan('running', { kind: 'pick', agentSession: 'S1' }))).toMatch(/running/);
  });

  it('started: pending → running with the next seq; started again keeps running, no transition', () => {
    const first = committed(plan('pending', { kind: 'event', event: 'started' }));
    expect(first.next).toMatchObject({ status: 'running', last_seq: 6, transition_seq: 4 });
    expect(first.seq).toBe(6);
    const again = committed(plan('running', { kind: 'event', event: 'started' }));
    expect(again.next).toMatchObject({ status: 'running', last_seq: 6, transition_seq: 3 });
  });

  it.each(['pending', 'running'] as const)('progress and permission_required keep %s, take a seq, no transition', (from) => {
    for (const event of ['progress', 'permission_required'] as const) {
      const r = committed(plan(from, { kind: 'event', event }));
      expect(r.next).toMatchObject({ status: from, last_seq: 6, transition_seq: 3 });
      expect(r.seq).toBe(6);
    }
  });

  it.each(['pending', 'running'] as const)('completed and error end a %s job', (from) => {
    for (const event of ['completed', 'error'] as const) {
      const r = committed(plan(from, { kind: 'event', event }));
      expect(r.next).toMatchObject({ status: event, last_seq: 6, transition_seq: 4 });
      expect(r.seq).toBe(6);
    }
  });

  it.each(['completed', 'error', 'cancelled'] as const)('everything but redispatch is refused on %s, naming the status', (from) => {
    for (const request of ALL_REQUESTS.filter((r) => r.kind !== 'redispatch')) {
      expect(refusedReason(plan(from, request))).toContain(from);
    }
  });

  it('close keeps its request as detail; deadline_timeout becomes error', () => {
    expect(committed(plan('running', { kind: 'close', request: 'deadline_timeout' })).next).toMatchObject({
      status: 'error',
      detail: 'deadline_timeout',
      transition_seq: 4,
      last_seq: 5,
    });
    expect(committed(plan('pending', { kind: 'close', request: 'cancelled' })).next).toMatchObject({ status: 'cancelled', detail: 'cancelled' });
  });

  it.each(JOB_STATUSES)('redispatch from %s: pending, attempt + 1, new token, last_seq kept, detail cleared', (from) => {
    const r = committed(plan(from, { kind: 'redispatch', dispatchToken: NEW_TOKEN }, { detail: 'deadline_timeout', attempt_id: 2 }));
    expect(r.next).toMatchObject({ status: 'pending', attempt_id: 3, dispatch_token: NEW_TOKEN, last_seq: 5, transition_seq: 4, detail: null });
    expect(r.seq).toBeUndefined();
  });
});

describe('fencing (contract §2)', () => {
  const second = { attempt_id: 2 };

  it('attempt 1: an unfenced terminal event passes', () => {
    expect(committed(plan('running', { kind: 'event', event: 'completed' })).next.status).toBe('completed');
  });

  it('attempt > 1: an unfenced terminal event is refused, unfenced non-terminal events pass', () => {
    for (const event of ['completed', 'error'] as const) {
      expect(refusedReason(plan('running', { kind: 'event', event }, second))).toMatch(/dispatch token|attempt/);
      expect(plan('running', { kind: 'mirror', event, seq: 9 }, second).outcome).toBe('refused');
    }
    for (const event of ['started', 'progress', 'permission_required'] as const) {
      expect(plan('running', { kind: 'event', event }, second).outcome).toBe('commit');
    }
  });

  it('attempt > 1: the current token or the current attempt id passes', () => {
    expect(committed(plan('running', { kind: 'event', event: 'completed', dispatchToken: TOKEN }, second)).next.status).toBe('completed');
    expect(committed(plan('running', { kind: 'event', event: 'error', attemptId: 2 }, second)).next.status).toBe('error');
    expect(committed(plan('running', { kind: 'mirror', event: 'completed', seq: 7, dispatchToken: TOKEN, attemptId: 2 }, second)).next.status).toBe(
      'completed',
    );
  });

  it.each(EVENTS)('a wrong token or attempt id is refused for %s, at any attempt', (event) => {
    for (const attempt of [1, 2]) {
      const patch = { attempt_id: attempt };
      expect(refusedReason(plan('running', { kind: 'event', event, dispatchToken: NEW_TOKEN }, patch))).toMatch(/stale dispatch token/);
      expect(refusedReason(plan('running', { kind: 'event', event, attemptId: attempt + 1 }, patch))).toMatch(/stale attempt/);
      expect(refusedReason(plan('running', { kind: 'mirror', event, seq: 9, attemptId: attempt - 1 }, patch))).toMatch(/stale attempt/);
      // The right token does not excuse a wrong attempt id.
      expect(plan('running', { kind: 'event', event, dispatchToken: TOKEN, attemptId: attempt + 1 }, patch).outcome).toBe('refused');
    }
  });

  it('operator requests need no fence', () => {
    expect(plan('running', { kind: 'close', request: 'cancelled' }, second).outcome).toBe('commit');
    expect(plan('error', { kind: 'redispatch', dispatchToken: NEW_TOKEN }, second).outcome).toBe('commit');
  });
});

describe('mirror (mam-subscribe --remote)', () => {
  it('keeps the larger seq and allocates none', () => {
    const lower = committed(plan('running', { kind: 'mirror', event: 'progress', seq: 3 }));
    expect(lower.next.last_seq).toBe(5);
    expect(lower.seq).toBeUndefined();
    expect(committed(plan('running', { kind: 'mirror', event: 'completed', seq: 9 })).next).toMatchObject({ status: 'completed', last_seq: 9 });
    expect(committed(plan('pending', { kind: 'mirror', event: 'started', seq: 1 })).next).toMatchObject({ status: 'running', last_seq: 5 });
  });
});

describe('invariants over random sequences of requests', () => {
  const request = fc.oneof(
    fc.constant<TransitionRequest>({ kind: 'pick', agentSession: 'S' }),
    fc.constantFrom(...EVENTS).map((event): TransitionRequest => ({ kind: 'event', event, dispatchToken: TOKEN })),
    fc.constantFrom(...EVENTS).map((event): TransitionRequest => ({ kind: 'event', event })),
    fc.tuple(fc.constantFrom(...EVENTS), fc.nat(20)).map(([event, seq]): TransitionRequest => ({ kind: 'mirror', event, seq, attemptId: 1 })),
    fc.constantFrom(...CLOSES).map((r): TransitionRequest => ({ kind: 'close', request: r })),
    fc.constant<TransitionRequest>({ kind: 'redispatch', dispatchToken: TOKEN }),
  );

  it('terminal stays terminal except by redispatch; seqs never go back; transition_seq counts changes', () => {
    fc.assert(
      fc.property(fc.array(request, { maxLength: 30 }), (requests) => {
        let current = record('pending');
        for (const req of requests) {
          const result = planTransition(current, req, NOW);
          if (isTerminalStatus(current.status) && req.kind !== 'redispatch') expect(result.outcome).toBe('refused');
          if (result.outcome === 'refused') continue;
          const { next } = result;
          expect(next.last_seq).toBeGreaterThanOrEqual(current.last_seq);
          expect(next.attempt_id).toBe(current.attempt_id + (req.kind === 'redispatch' ? 1 : 0));
          const changed = next.status !== current.status || req.kind === 'redispatch';
          expect(next.transition_seq).toBe(current.transition_seq + (changed ? 1 : 0));
          current = next;
        }
      }),
    );
  });
});
