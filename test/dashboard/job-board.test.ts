import { describe, expect, it } from 'vitest';
import { type ActivityNote, JobBoard, noteOfPayload } from '../../src/core/dashboard/job-board.ts';
import type { JobRecord } from '../../src/core/registry/job-record.ts';
import { parseWireJson } from '../../src/core/wire/canonical-json.ts';

const T0 = Date.parse('2026-12-02T10:00:00.000Z');

function record(id: string, patch: Partial<JobRecord> = {}): JobRecord {
  return {
    job_id: id,
    status: 'pending',
    created_at: '2026-12-02T10:00:00.000Z',
    updated_at: '2026-12-02T10:00:00.000Z',
    agent_session: null,
    brief: `brief of ${id}\nsecond line`,
    last_seq: 0,
    auth_token: 'SECRET-TOKEN-never-on-the-page-000000',
    dispatch_token: '0123456789abcdef0123456789abcdef',
    attempt_id: 1,
    transition_seq: 0,
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

const note = (seq: number, event: string, at: number, detail = `d${seq}`, attempt = 1): ActivityNote => ({ attempt, seq, event, detail, at });

function board(now: { t: number }, extra: ConstructorParameters<typeof JobBoard>[0] = {}) {
  return new JobBoard({ now: () => now.t, watchingSince: T0, ...extra });
}

describe('JobBoard', () => {
  it('counts the ones that need attention first, then the statuses', () => {
    const now = { t: T0 };
    const b = board(now);
    b.syncRecord(record('00000001', { status: 'error' }));
    b.syncRecord(record('00000002', { status: 'running' }));
    b.syncRecord(record('00000003'));
    expect(b.counts().map((c) => [c.key, c.count, c.attention])).toEqual([
      ['error', 1, true],
      ['stalled', 0, true],
      ['permission', 0, true],
      ['running', 1, false],
      ['pending', 1, false],
      ['completed', 0, false],
      ['cancelled', 0, false],
    ]);
  });

  it('moves a pending job on with verified events of its attempt, and an operator close wins', () => {
    const now = { t: T0 };
    const b = board(now);
    b.syncRecord(record('00000001'));
    b.note('00000001', note(1, 'started', T0 + 1000), true);
    expect(b.row('00000001')!.status).toBe('running');
    b.note('00000001', note(2, 'completed', T0 + 2000), true);
    expect(b.row('00000001')!.status).toBe('completed');
    // The record says cancelled (a close raced the agent): the record is the truth.
    b.syncRecord(record('00000001', { status: 'cancelled', detail: 'cancelled' }));
    expect(b.row('00000001')!.status).toBe('cancelled');
  });

  it('ignores notes of another attempt and starts afresh on a redispatch', () => {
    const now = { t: T0 };
    const b = board(now);
    b.syncRecord(record('00000001', { status: 'error', last_seq: 3 }));
    b.note('00000001', note(2, 'progress', T0 + 500), false);
    expect(b.row('00000001')!.last_event).toBe('progress');
    const { newAttempt } = b.syncRecord(record('00000001', { status: 'pending', attempt_id: 2, last_seq: 3 }));
    expect(newAttempt).toBe(true);
    expect(b.row('00000001')).toMatchObject({ status: 'pending', attempt_id: 2, last_event: null, last_beat_at: null });
    b.note('00000001', note(4, 'started', T0 + 1000, 'old attempt', 1), true);
    expect(b.row('00000001')!.status).toBe('pending');
    expect(b.liveEntries('00000001')).toEqual([]);
  });

  it('calls a running job stalled once its idle allowance passes without an event, and an event ends it', () => {
    const now = { t: T0 };
    const b = board(now);
    b.syncRecord(record('00000001', { status: 'running', idle_timeout_sec: 60, ack_timeout_sec: 30 }));
    // Before the first event the allowance is ack + idle (contract §4): 90 s from the record's change.
    now.t = T0 + 89_000;
    b.sweep();
    expect(b.row('00000001')!.health).toBeNull();
    now.t = T0 + 90_000;
    b.sweep();
    expect(b.row('00000001')!.health).toBe('stalled');
    expect(b.counts().find((c) => c.key === 'stalled')!.count).toBe(1);
    b.note('00000001', note(1, 'progress', now.t, 'heartbeat'), true);
    expect(b.row('00000001')!.health).toBeNull();
    // After an event, idle alone.
    now.t += 60_000;
    b.sweep();
    expect(b.row('00000001')!.health).toBe('stalled');
  });

  it('gives a remote job its allowance from when the dashboard began to watch, not from an old record', () => {
    const now = { t: T0 + 3_600_000 };
    const b = new JobBoard({ now: () => now.t, watchingSince: now.t });
    b.syncRecord(record('00000001', { status: 'running', transport: 'remote', idle_timeout_sec: 60, ack_timeout_sec: 30 }));
    b.syncRecord(record('00000002', { status: 'running', idle_timeout_sec: 60, ack_timeout_sec: 30 }));
    b.sweep();
    expect(b.row('00000001')!.health).toBeNull();
    expect(b.row('00000002')!.health).toBe('stalled');
  });

  it('keeps "waiting for permission" through heartbeats, and drops it on the next real event', () => {
    const now = { t: T0 };
    const b = board(now);
    b.syncRecord(record('00000001', { status: 'running' }));
    b.note('00000001', note(1, 'permission_required', T0 + 1000, 'may I push?'), true);
    b.note('00000001', note(2, 'progress', T0 + 2000, 'heartbeat'), true);
    expect(b.row('00000001')).toMatchObject({
      health: 'permission',
      last_event: 'progress',
      last_detail: 'may I push?',
      milestone_event: 'permission_required',
      last_beat_at: T0 + 2000,
    });
    expect(b.counts().find((c) => c.key === 'permission')!.count).toBe(1);
    b.note('00000001', note(3, 'progress', T0 + 3000, 'granted, pushing'), true);
    expect(b.row('00000001')).toMatchObject({ health: null, milestone_event: 'progress' });
  });

  it('keeps a bounded live timeline, folds runs of heartbeats, and drops a re-delivered seq', () => {
    const now = { t: T0 };
    const b = board(now, { ringLimit: 5 });
    b.syncRecord(record('00000001', { status: 'running' }));
    for (let seq = 1; seq <= 100; seq++) b.note('00000001', note(seq, 'progress', T0 + seq, 'heartbeat'), true);
    expect(b.liveEntries('00000001')).toHaveLength(1);
    expect(b.liveEntries('00000001')[0]).toMatchObject({ seq: 1, seq_to: 100, count: 100 });
    for (let seq = 101; seq <= 120; seq++) b.note('00000001', note(seq, 'progress', T0 + seq, `step ${seq}`), true);
    expect(b.liveEntries('00000001')).toHaveLength(5);
    expect(b.liveEntries('00000001').map((e) => e.seq)).toEqual([116, 117, 118, 119, 120]);
    b.note('00000001', note(120, 'progress', T0 + 999, 'step 120'), true);
    expect(b.liveEntries('00000001')).toHaveLength(5);
  });

  it('marks rejected messages by reason and seq only, and hands changes over once', () => {
    const now = { t: T0 };
    const b = board(now);
    b.syncRecord(record('00000001', { status: 'running' }));
    b.takeChanges();
    expect(b.hasChanges).toBe(false);
    b.noteRejected('00000001', 'hmac', 7, T0 + 5);
    b.noteRejected('ffffffff', 'hmac', 1, T0 + 5); // not on the board: nowhere to mark it
    const changes = b.takeChanges();
    expect(changes.entries).toEqual([
      { job_id: '00000001', entry: { kind: 'rejected', at: T0 + 5, seq: 7, attempt: null, event: 'hmac', detail: 'message rejected (hmac)', source: 'live' } },
    ]);
    expect(b.takeChanges()).toEqual({ rows: [], removed: [], entries: [], dropped: 0 });
    b.removeJob('00000001');
    expect(b.takeChanges().removed).toEqual(['00000001']);
  });

  it('never holds the token: rows and records are what `mam show` prints', () => {
    const now = { t: T0 };
    const b = board(now);
    b.syncRecord(record('00000001', { status: 'running' }));
    b.note('00000001', note(1, 'started', T0), true);
    const text = JSON.stringify([b.rows(), b.record('00000001'), b.liveEntries('00000001'), b.counts()]);
    expect(text).not.toContain('SECRET-TOKEN');
    expect(text).not.toContain('auth_token');
    expect(b.row('00000001')!.brief).toBe('brief of 00000001');
  });

  it('takes an agent from the record or from its started event, and presence adds the offline count (issue 14)', () => {
    const now = { t: T0 };
    const presence = { isOffline: (r: { agent_session: string | null }) => r.agent_session === 'gone' };
    const b = board(now, { presence });
    b.syncRecord(record('00000001', { status: 'running', agent_session: 'gone' }));
    b.syncRecord(record('00000002', { status: 'running', agent: 'codex' } as Partial<JobRecord>));
    b.syncRecord(record('00000003', { status: 'running' }));
    b.note('00000003', { ...note(1, 'started', T0), agent: 'claude' }, true);
    expect(b.row('00000001')!.health).toBe('offline');
    expect(b.row('00000002')!.agent).toBe('codex');
    expect(b.row('00000003')!.agent).toBe('claude');
    expect(b.counts().find((c) => c.key === 'offline')).toEqual({ key: 'offline', label: 'agent offline', count: 1, attention: true });
  });

  it('lists the actions that apply to each row', () => {
    const now = { t: T0 };
    const b = board(now, { actionsFor: (row) => (row.status === 'running' ? ['cancel'] : []) });
    b.syncRecord(record('00000001', { status: 'running' }));
    b.syncRecord(record('00000002', { status: 'completed' }));
    expect(b.row('00000001')!.actions).toEqual(['cancel']);
    expect(b.row('00000002')!.actions).toEqual([]);
  });

  it('reads notes from payloads as the watch prints them (numbers as lexemes), states included', () => {
    const event = parseWireJson('{"schema_version":1,"seq":3,"job_id":"00000001","event":"progress","detail":"x","data":{"attempt_id":1,"agent":"aider"}}');
    expect(noteOfPayload(event, 5)).toEqual({ attempt: 1, seq: 3, event: 'progress', status: null, detail: 'x', at: 5, agent: 'aider' });
    const state = parseWireJson('{"seq":4,"event":"state","status":"cancelled","detail":"Job 00000001 cancelled","data":{"attempt_id":1}}');
    expect(noteOfPayload(state, 6)).toMatchObject({ event: null, status: 'cancelled', seq: 4 });
    expect(noteOfPayload({ seq: 'x' }, 1)).toBeUndefined();
  });

  it('resolves a job from a terminal state the watch printed', () => {
    const now = { t: T0 };
    const b = board(now);
    b.syncRecord(record('00000001', { status: 'running' }));
    b.note('00000001', { attempt: 1, seq: 4, event: null, status: 'error', detail: '', at: T0 }, true);
    expect(b.row('00000001')!.status).toBe('error');
  });
});
