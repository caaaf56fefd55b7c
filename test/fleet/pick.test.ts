import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { isAddressedTo, parseAddress } from '../../src/core/fleet/addressing.ts';
import { jobRecordSchema } from '../../src/core/registry/job-record.ts';
import { type Workspace, makeWorkspace } from '../helpers/cli.ts';
import { runInProcess } from '../helpers/in-process.ts';

/**
 * Addressing and capability routing (docs/coordination-reference.md): `mam-register --to`,
 * `mam-pick --capabilities`.
 */

function workspace(): Workspace {
  const ws = makeWorkspace();
  onTestFinished(() => ws.cleanup());
  return ws;
}

async function register(ws: Workspace, id: string, ...args: string[]): Promise<Record<string, unknown>> {
  const r = await runInProcess('mam-register', ['--job-id', id, '--brief', id, ...args], ws);
  if (r.code !== 0) throw new Error(`mam-register ${id}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

async function pick(ws: Workspace, session: string, caps?: string): Promise<string | undefined> {
  const r = await runInProcess('mam-pick', ['--agent-session', session, ...(caps ? ['--capabilities', caps] : [])], ws);
  if (r.code === 4) return undefined;
  if (r.code !== 0) throw new Error(`mam-pick ${session}: exit ${r.code} ${r.stderr}`);
  return (JSON.parse(r.stdout) as { job_id: string }).job_id;
}

describe('addressing', () => {
  it.each<[string | null | undefined, string, string[], boolean]>([
    [undefined, 's', [], true],
    [null, 's', [], true],
    ['alice', 'alice', [], true],
    ['alice', 'bob', ['alice'], false],
    ['capability:ts', 'bob', ['ts'], true],
    ['capability:ts', 'ts', [], false],
    ['capability:bad level', 'x', ['bad level'], false],
  ])('to=%s session=%s caps=%j → %s', (to, session, caps, expected) => {
    expect(isAddressedTo(to, session, caps)).toBe(expected);
  });

  it('parses names and capabilities, refuses the rest', () => {
    expect(parseAddress('rev-1')).toEqual({ kind: 'agent', name: 'rev-1' });
    expect(parseAddress('capability:ts')).toEqual({ kind: 'capability', capability: 'ts' });
    expect(typeof parseAddress('a/b')).toBe('string');
    expect(typeof parseAddress('capability:')).toBe('string');
  });

  it('a record without `to` (an older one) still parses; one with it keeps it', () => {
    const base = {
      job_id: 'abcd1234',
      status: 'pending',
      created_at: '2025-01-01T00:00:00.000Z',
      updated_at: '2025-01-01T00:00:00.000Z',
      agent_session: null,
      brief: 'b',
      last_seq: 0,
      auth_token: 'x'.repeat(43),
      dispatch_token: '0'.repeat(32),
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
    };
    expect(jobRecordSchema.safeParse(base).success).toBe(true);
    expect(jobRecordSchema.parse({ ...base, to: 'capability:x' }).to).toBe('capability:x');
  });
});

describe('mam-register --to / mam-pick --capabilities', () => {
  it('register records `to`; refuses a bad address or one that contradicts --agent-session (exit 64)', async () => {
    const ws = workspace();
    expect((await register(ws, 'e0000001', '--to', 'capability:ts')).to).toBe('capability:ts');
    expect((await register(ws, 'e0000002')).to).toBeUndefined();
    const bad = await runInProcess('mam-register', ['--brief', 'x', '--to', 'a b'], ws);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/^ERROR: --to: /);
    const clash = await runInProcess('mam-register', ['--brief', 'x', '--to', 'alice', '--agent-session', 'bob'], ws);
    expect(clash.code).toBe(64);
  });

  it('claims the oldest job for its name, one of its capabilities, or nobody; never one for another', async () => {
    const ws = workspace();
    await register(ws, 'e1000001', '--to', 'carol');
    await register(ws, 'e1000002', '--to', 'capability:rust');
    await register(ws, 'e1000003', '--to', 'capability:ts');
    await register(ws, 'e1000004');
    await register(ws, 'e1000005', '--to', 'bob');
    expect(await pick(ws, 'bob', 'ts')).toBe('e1000003');
    expect(await pick(ws, 'bob', 'ts')).toBe('e1000004');
    expect(await pick(ws, 'bob', 'ts')).toBe('e1000005');
    expect(await pick(ws, 'bob', 'ts')).toBeUndefined();
    // Without --capabilities a session still gets what is addressed to its name.
    expect(await pick(ws, 'carol')).toBe('e1000001');
    expect(await pick(ws, 'dave', 'rust')).toBe('e1000002');
  });

  it('8 concurrent pickers with different capabilities: every job claimed exactly once, by an addressee', async () => {
    const ws = workspace();
    const pickers: Array<[string, string]> = [
      ['p1', 'ts'],
      ['p2', 'ts'],
      ['p3', 'rust'],
      ['p4', 'rust,ts'],
      ['p5', 'docs'],
      ['p6', ''],
      ['p7', 'ts,docs'],
      ['p8', 'rust'],
    ];
    const addresses = ['capability:ts', 'capability:rust', 'capability:docs', '', 'p6', 'capability:ts', 'p1', ''];
    const jobs: Array<{ id: string; to: string }> = [];
    for (let i = 0; i < 24; i++) {
      const id = `e2${String(i).padStart(6, '0')}`;
      const to = addresses[i % addresses.length]!;
      await register(ws, id, ...(to ? ['--to', to] : []));
      jobs.push({ id, to });
    }
    const claims = new Map<string, string[]>();
    await Promise.all(
      pickers.map(async ([session, caps]) => {
        for (;;) {
          const id = await pick(ws, session, caps || undefined);
          if (id === undefined) return;
          claims.set(id, [...(claims.get(id) ?? []), session]);
        }
      }),
    );
    for (const job of jobs) {
      const by = claims.get(job.id);
      expect({ job: job.id, claimedBy: by?.length }).toEqual({ job: job.id, claimedBy: 1 });
      const [session] = by!;
      const caps = pickers.find(([s]) => s === session)![1].split(',');
      if (job.to.startsWith('capability:')) expect(caps).toContain(job.to.slice('capability:'.length));
      else if (job.to) expect(session).toBe(job.to);
      const record = JSON.parse(readFileSync(path.join(ws.root, '.mam/jobs', `${job.id}.json`), 'utf8')) as { status: string; agent_session: string };
      expect(record).toMatchObject({ status: 'running', agent_session: session });
    }
  });

  it('the pick index stays right when addressed jobs are skipped: a later pick by the addressee finds them', async () => {
    const ws = workspace();
    await register(ws, 'e3000001', '--to', 'capability:gpu');
    await register(ws, 'e3000002');
    expect(await pick(ws, 'a')).toBe('e3000002');
    expect(await pick(ws, 'a')).toBeUndefined();
    // A corrupt index (the cache) is rebuilt from the records; the addressed job is still there.
    mkdirSync(path.join(ws.root, '.mam/jobs'), { recursive: true });
    writeFileSync(path.join(ws.root, '.mam/jobs/.pick-index.json'), '{');
    expect(await pick(ws, 'b', 'gpu')).toBe('e3000001');
  });
});
