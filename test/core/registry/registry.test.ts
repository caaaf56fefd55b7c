import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExitCode, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import { CorruptRecord, MamError, NoSuchJob, NothingPickable, TransitionRefused, UsageError } from '../../../src/core/errors.ts';
import { jobRecordSchema, publicView } from '../../../src/core/registry/job-record.ts';
import { auditLines, bytes, caught, input, mode, tempRegistry, tick } from './registry-fixtures.ts';

const A = 'aaaaaaaa';
const B = 'bbbbbbbb';
const C = 'cccccccc';

describe('register (contract §2)', () => {
  it('writes the record 0600, folders 0700, meta without token, status and a registered line', async () => {
    const { registry } = tempRegistry();
    const rec = await registry.register(input({ jobId: A }));
    const { paths } = registry;
    expect(mode(paths.record(A))).toBe(0o600);
    expect(mode(paths.registryDir)).toBe(0o700);
    expect(mode(paths.logDir)).toBe(0o700);
    expect(mode(paths.jobLogDir(A))).toBe(0o700);
    for (const f of [paths.meta(A), paths.status(A), paths.events(A)]) expect(mode(f)).toBe(0o600);

    const onDisk = JSON.parse(readFileSync(paths.record(A), 'utf8'));
    expect(onDisk).toEqual(rec);
    expect(jobRecordSchema.parse(onDisk)).toEqual(rec);
    const metaText = readFileSync(paths.meta(A), 'utf8');
    expect(metaText).not.toContain('auth_token');
    expect(metaText).not.toContain(rec.auth_token);
    expect(JSON.parse(metaText)).toEqual(publicView(rec));
    expect(JSON.parse(readFileSync(paths.status(A), 'utf8'))).toEqual({ status: 'pending', updated_at: rec.updated_at, last_seq: 0 });
    const lines = auditLines(registry, A);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ type: 'registered', job_id: A, attempt_id: 1 });
  });

  it('fills the record: tokens, counters, defaults, ISO-8601 ms UTC times', async () => {
    const { registry } = tempRegistry();
    const rec = await registry.register(input({ heartbeatSec: 10, heartbeatMisses: 3 }));
    expect(rec.job_id).toMatch(/^[0-9a-f]{8}$/);
    expect(rec.auth_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(rec.auth_token, 'base64url')).toHaveLength(32);
    expect(rec.dispatch_token).toMatch(/^[0-9a-f]{32}$/);
    expect(rec.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(rec).toMatchObject({ status: 'pending', last_seq: 0, attempt_id: 1, transition_seq: 0, idle_timeout_sec: 30, agent_session: null, detail: null });
    const other = await registry.register(input());
    expect(other.auth_token).not.toBe(rec.auth_token);
    expect(other.dispatch_token).not.toBe(rec.dispatch_token);
  });

  it('refuses a duplicate job id and leaves the first record alone', async () => {
    const { registry } = tempRegistry();
    await registry.register(input({ jobId: A }));
    const before = bytes(registry.paths.record(A));
    const err = await caught(() => registry.register(input({ jobId: A, brief: 'other' })));
    expect(err).toBeInstanceOf(MamError);
    expect(err.message).toMatch(/already exists/);
    expect(bytes(registry.paths.record(A))).toEqual(before);
  });

  it('depends_on a missing job is NoSuchJob and writes nothing; a bad id is a usage error', async () => {
    const { registry } = tempRegistry();
    const err = await caught(() => registry.register(input({ jobId: A, dependsOn: [B] })));
    expect(err).toBeInstanceOf(NoSuchJob);
    expect(exitCodeOf(err)).toBe(ExitCode.noSuchJob);
    expect(registry.exists(A)).toBe(false);
    expect(await caught(() => registry.register(input({ jobId: 'XYZ' })))).toBeInstanceOf(UsageError);
  });
});

describe('pick (contract §1)', () => {
  it('claims the oldest pending job first', async () => {
    const { registry } = tempRegistry();
    for (const id of [C, A, B]) {
      await registry.register(input({ jobId: id }));
      await tick();
    }
    expect((await registry.pick('S')).job_id).toBe(C);
    expect((await registry.pick('S')).job_id).toBe(A);
    const last = await registry.pick('S');
    expect(last).toMatchObject({ job_id: B, status: 'running', agent_session: 'S', transition_seq: 1 });
    expect(registry.read(B)).toEqual(last);
  });

  it('nothing pickable is NothingPickable (exit 4)', async () => {
    const { registry } = tempRegistry();
    const err = await caught(() => registry.pick('S'));
    expect(err).toBeInstanceOf(NothingPickable);
    expect(exitCodeOf(err)).toBe(ExitCode.nothingPickable);
  });

  it('honours agent_session: a bound job goes only to its session', async () => {
    const { registry } = tempRegistry();
    await registry.register(input({ jobId: A, agentSession: 'S1' }));
    await tick();
    await registry.register(input({ jobId: B }));
    expect((await registry.pick('S2')).job_id).toBe(B);
    expect(await caught(() => registry.pick('S2'))).toBeInstanceOf(NothingPickable);
    expect((await registry.pick('S1')).job_id).toBe(A);
  });

  it('honours depends_on: picked only once every dependency is completed', async () => {
    const { registry } = tempRegistry();
    await registry.register(input({ jobId: A }));
    await tick();
    await registry.register(input({ jobId: B }));
    await tick();
    await registry.register(input({ jobId: C, dependsOn: [A, B] }));
    expect((await registry.pick('S')).job_id).toBe(A);
    expect((await registry.pick('S')).job_id).toBe(B);
    expect(await caught(() => registry.pick('S'))).toBeInstanceOf(NothingPickable);
    await registry.close(A, 'completed');
    expect(await caught(() => registry.pick('S'))).toBeInstanceOf(NothingPickable);
    await registry.close(B, 'error');
    expect(await caught(() => registry.pick('S'))).toBeInstanceOf(NothingPickable);
    await registry.redispatch(B);
    expect((await registry.pick('S')).job_id).toBe(B);
    await registry.close(B, 'completed');
    expect((await registry.pick('S')).job_id).toBe(C);
  });

  it('a job redispatched back to pending is pickable again, as a new attempt', async () => {
    const { registry } = tempRegistry();
    const first = await registry.register(input({ jobId: A }));
    await registry.pick('S');
    await registry.close(A, 'deadline_timeout');
    const { record } = await registry.redispatch(A);
    expect(record).toMatchObject({ status: 'pending', attempt_id: 2, detail: null });
    expect(record.dispatch_token).not.toBe(first.dispatch_token);
    expect(await registry.pick('S')).toMatchObject({ job_id: A, status: 'running', attempt_id: 2, transition_seq: 4 });
    expect(auditLines(registry, A).map((l) => l.type)).toEqual(['registered', 'status_changed', 'status_changed', 'redispatched', 'status_changed']);
  });

  it('a redispatch reopens the job to the sessions named at registration, not only to the one that picked it', async () => {
    const { registry } = tempRegistry();
    await registry.register(input({ jobId: A }));
    await registry.register(input({ jobId: B, agentSession: 'only-me' }));
    await registry.pick('S1');
    await registry.close(A, 'error');
    expect((await registry.redispatch(A)).record.agent_session).toBeNull();
    expect(await registry.pick('S2')).toMatchObject({ job_id: A, agent_session: 'S2', attempt_id: 2 });
    await registry.pick('only-me');
    await registry.close(B, 'error');
    expect((await registry.redispatch(B)).record.agent_session).toBe('only-me');
  });
});

describe('refusals change nothing on disk', () => {
  it('close on a terminal job is audited "refused" and leaves every file byte-identical', async () => {
    const { registry } = tempRegistry();
    await registry.register(input({ jobId: A }));
    await registry.close(A, 'cancelled');
    const files = [registry.paths.record(A), registry.paths.meta(A), registry.paths.status(A), registry.paths.pickIndex];
    const before = files.map(bytes);
    const linesBefore = auditLines(registry, A).length;
    const err = await caught(() => registry.close(A, 'completed'));
    expect(err).toBeInstanceOf(TransitionRefused);
    expect(exitCodeOf(err)).toBe(ExitCode.refused);
    expect(files.map(bytes)).toEqual(before);
    const lines = auditLines(registry, A);
    expect(lines).toHaveLength(linesBefore + 1);
    expect(lines.at(-1)).toMatchObject({ type: 'refused', source: 'operator', request: 'close:completed', status: 'cancelled' });
  });

  it('a stale dispatch token is refused the same way', async () => {
    const { registry } = tempRegistry();
    await registry.register(input({ jobId: A }));
    await registry.pick('S');
    const before = bytes(registry.paths.record(A));
    const err = await caught(() => registry.update(A, { kind: 'event', event: 'progress', dispatchToken: 'f'.repeat(32) }, 'agent'));
    expect(err).toBeInstanceOf(TransitionRefused);
    expect(bytes(registry.paths.record(A))).toEqual(before);
    expect(auditLines(registry, A).at(-1)).toMatchObject({ type: 'refused', source: 'agent', reason: 'stale dispatch token' });
  });

  it('update, close and show of an unknown job are NoSuchJob', async () => {
    const { registry } = tempRegistry();
    expect(await caught(() => registry.close(A, 'cancelled'))).toBeInstanceOf(NoSuchJob);
    expect(await caught(() => registry.read(A))).toBeInstanceOf(NoSuchJob);
  });
});

describe('corrupt records (contract §2: named, never overwritten, never a crash)', () => {
  it.each([
    ['garbage', '{"job_id": "bbbbbbbb", "status": '],
    ['a schema failure', JSON.stringify({ job_id: B, status: 'paused' })],
    ['a job_id that is not its file name', 'RENAMED'],
  ])('%s: named in the error, left byte-identical; other jobs keep working', async (_label, text) => {
    const { registry, warnings } = tempRegistry();
    await registry.register(input({ jobId: A }));
    await tick();
    const b = await registry.register(input({ jobId: B }));
    await tick();
    await registry.register(input({ jobId: C }));
    const file = registry.paths.record(B);
    const content = text === 'RENAMED' ? JSON.stringify({ ...b, job_id: C }) : text;
    writeFileSync(file, content);

    const err = await caught(() => registry.read(B));
    expect(err).toBeInstanceOf(CorruptRecord);
    expect(err.message).toContain(file);
    expect(await caught(() => registry.close(B, 'cancelled'))).toBeInstanceOf(CorruptRecord);
    expect(await caught(() => registry.redispatch(B))).toBeInstanceOf(CorruptRecord);

    expect((await registry.pick('S')).job_id).toBe(A);
    expect((await registry.pick('S')).job_id).toBe(C);
    expect(warnings.some((w) => w.includes(file))).toBe(true);
    expect(await caught(() => registry.pick('S'))).toBeInstanceOf(NothingPickable);
    const { records, corrupt } = registry.list();
    expect(records.map((r) => r.job_id)).toEqual([A, C]);
    expect(corrupt.map((e) => e.path)).toEqual([file]);
    expect(readFileSync(file, 'utf8')).toBe(content);
  });

  it('unknown fields in a record survive a pick and a close', async () => {
    const { registry } = tempRegistry();
    const rec = await registry.register(input({ jobId: A }));
    const future = { x_future: { nested: [1, 'two'] }, x_flag: true };
    writeFileSync(registry.paths.record(A), JSON.stringify({ ...rec, ...future }));
    await registry.pick('S');
    expect(JSON.parse(readFileSync(registry.paths.record(A), 'utf8'))).toMatchObject({ ...future, status: 'running' });
    await registry.close(A, 'completed');
    expect(JSON.parse(readFileSync(registry.paths.record(A), 'utf8'))).toMatchObject({ ...future, status: 'completed' });
  });
});

describe('the pick index is only a cache', () => {
  async function threeJobs() {
    const t = tempRegistry();
    for (const id of [A, B, C]) {
      await t.registry.register(input({ jobId: id }));
      await tick();
    }
    return t;
  }

  it('deleted: the next pick is still right', async () => {
    const { registry } = await threeJobs();
    await registry.pick('S');
    rmSync(registry.paths.pickIndex);
    expect((await registry.pick('S')).job_id).toBe(B);
  });

  it.each([
    ['garbage', 'not json{'],
    ['the wrong shape', '{"version": 2, "pending": "all"}'],
    ['empty', ''],
  ])('corrupted (%s): the next pick is still right', async (_label, text) => {
    const { registry } = await threeJobs();
    await registry.close(A, 'cancelled');
    writeFileSync(registry.paths.pickIndex, text);
    expect((await registry.pick('S')).job_id).toBe(B);
    expect((await registry.pick('S')).job_id).toBe(C);
  });

  it('a record copied in by hand is seen, in its registration order', async () => {
    const { registry } = await threeJobs();
    const template = registry.read(B);
    const D = 'dddddddd';
    writeFileSync(registry.paths.record(D), JSON.stringify({ ...template, job_id: D, created_at: '2000-01-01T00:00:00.000Z' }), { mode: 0o600 });
    expect((await registry.pick('S')).job_id).toBe(D);
    expect((await registry.pick('S')).job_id).toBe(A);
  });

  it('one record removed and another copied in by hand (same count): the index is rebuilt, the new one seen', async () => {
    const { registry } = await threeJobs();
    const template = registry.read(B);
    rmSync(registry.paths.record(A));
    const D = 'dddddddd';
    writeFileSync(registry.paths.record(D), JSON.stringify({ ...template, job_id: D, created_at: '2000-01-01T00:00:00.000Z' }), { mode: 0o600 });
    expect((await registry.pick('S')).job_id).toBe(D);
    expect((await registry.pick('S')).job_id).toBe(B);
  });

  it('a record removed by hand is skipped', async () => {
    const { registry } = await threeJobs();
    rmSync(registry.paths.record(A));
    expect((await registry.pick('S')).job_id).toBe(B);
  });
});
