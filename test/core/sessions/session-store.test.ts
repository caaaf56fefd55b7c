import { mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CorruptRecord } from '../../../src/core/errors.ts';
import { type SessionRecord, sessionRecordSchema } from '../../../src/core/sessions/session-record.ts';
import { NoSuchSession } from '../../../src/core/sessions/session-errors.ts';
import { SessionStore } from '../../../src/core/sessions/session-store.ts';
import { REPO_ROOT, type Workspace, makeWorkspace } from '../../helpers/cli.ts';
import { sleep } from '../../helpers/wait.ts';
import { mulberry32, spawnNode } from '../registry/fixtures/processes.ts';

const WORKER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'session-worker.mjs');

let ws: Workspace;
let store: SessionStore;
const dirs = () => ({ registryDir: path.join(ws.root, '.mam', 'jobs'), logDir: path.join(ws.root, '.mam', 'logs') });
beforeEach(() => {
  ws = makeWorkspace();
  store = new SessionStore({ paths: dirs() });
});
afterEach(() => ws.cleanup());

function fresh(name: string): SessionRecord {
  const now = new Date().toISOString();
  return {
    name,
    agent: 'shell',
    state: 'running',
    workdir: ws.root,
    created_at: now,
    updated_at: now,
    generation: 1,
    tmux_session: null,
    pane_id: null,
    pane_pid: null,
    agent_session_id: null,
    idle: true,
    current_job: null,
    jobs_done: 0,
    last_event: null,
    detail: null,
  };
}

async function bundleStore(): Promise<string> {
  const { build } = await import('esbuild');
  const outfile = path.join(ws.root, 'session-store-bundle.mjs');
  await build({
    entryPoints: [path.join(REPO_ROOT, 'src/core/sessions/session-store.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; import { fileURLToPath as __f2p } from 'node:url'; const require = __cr(import.meta.url); const __filename = __f2p(import.meta.url);",
    },
  });
  return outfile;
}

const worker = (bundle: string, name: string, count: number) => spawnNode([WORKER, bundle, dirs().registryDir, dirs().logDir, name, String(count)], ws);

describe('SessionStore', () => {
  it('reads back what it wrote; keeps unknown fields; a legacy `archived` record reads', async () => {
    await store.withLock('s1', () => store.write({ ...fresh('s1'), from_the_seed: { x: 1 } }));
    expect(store.read('s1')).toMatchObject({ name: 's1', from_the_seed: { x: 1 } });
    await store.update('s1', (r) => ({ ...r, state: 'archived' }));
    expect(store.read('s1')).toMatchObject({ state: 'archived', from_the_seed: { x: 1 } });
    expect(store.list().sessions.map((s) => s.name)).toEqual(['s1']);
  });

  it('no such session; a corrupt record is named, listed as corrupt, never overwritten', () => {
    expect(() => store.read('nope')).toThrow(NoSuchSession);
    mkdirSync(store.dir, { recursive: true });
    writeFileSync(store.file('bad'), '{"name":"bad",');
    expect(() => store.read('bad')).toThrow(CorruptRecord);
    expect(store.list().corrupt).toHaveLength(1);
    expect(readFileSync(store.file('bad'), 'utf8')).toBe('{"name":"bad",');
  });

  it('refuses names that are no file or tmux name', () => {
    for (const bad of ['', '../x', 'a.b', 'a:b', '-x', 'a b', 'x'.repeat(49)]) expect(() => store.file(bad)).toThrow(/session name/);
  });

  it('20 concurrent writer processes, 10 updates each: every update counted once, the record valid', { timeout: 120_000 }, async () => {
    await store.withLock('busy', () => store.write(fresh('busy')));
    const bundle = await bundleStore();
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 20 }, () => worker(bundle, 'busy', 10).done));
    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });
    process.stderr.write(`[sessions] 20 writers × 10 updates in ${Date.now() - started} ms\n`);
    const record = store.read('busy');
    expect(record.jobs_done).toBe(200);
    expect(sessionRecordSchema.safeParse(record).success).toBe(true);
  });

  it('kill -9 storm: writers SIGKILLed at random moments leave a parseable record and a lock the next writer takes over', { timeout: 120_000 }, async () => {
    await store.withLock('storm', () => store.write(fresh('storm')));
    const bundle = await bundleStore();
    const random = mulberry32(Number(process.env.MAM_TEST_SEED ?? 25));
    const spawned = Array.from({ length: 20 }, () => worker(bundle, 'storm', 50));
    let kills = 0;
    const reads: number[] = [];
    for (const s of spawned) {
      await sleep(random() * 150);
      if (random() < 0.6 && s.kill()) kills++;
      // Readers never block and never see a torn record, mid-storm.
      reads.push(store.read('storm').jobs_done);
    }
    const results = await Promise.all(spawned.map((s) => s.done));
    const printed = results.reduce((n, r) => n + r.stdout.split('\n').filter((l) => l !== '').length, 0);
    const killed = results.filter((r) => r.signal === 'SIGKILL').length;
    for (const r of results) if (r.signal !== 'SIGKILL') expect(r, r.stderr).toMatchObject({ code: 0 });
    const record = store.read('storm');
    // A killed writer may have committed one update it did not get to print.
    expect(record.jobs_done).toBeGreaterThanOrEqual(printed);
    expect(record.jobs_done).toBeLessThanOrEqual(printed + killed);
    expect(reads).toEqual([...reads].sort((a, b) => a - b));
    // A lock left by a killed holder is taken over: the next update succeeds.
    const after = Date.now();
    await store.update('storm', (r) => ({ ...r, jobs_done: r.jobs_done + 1 }));
    expect(store.read('storm').jobs_done).toBe(record.jobs_done + 1);
    process.stderr.write(
      `[sessions] kill -9 storm: ${kills} of 20 writers killed, ${record.jobs_done} updates kept, next update after ${Date.now() - after} ms\n`,
    );
    expect(readdirSync(store.dir).filter((f) => f.endsWith('.json'))).toEqual(['storm.json']);

    // A holder killed inside the lock leaves its lock folder behind, unrefreshed: taken over within seconds.
    const lock = path.join(store.dir, 'storm.lock');
    mkdirSync(lock);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    const before = Date.now();
    await store.update('storm', (r) => ({ ...r, jobs_done: r.jobs_done + 1 }));
    const tookOverMs = Date.now() - before;
    expect(store.read('storm').jobs_done).toBe(record.jobs_done + 2);
    expect(tookOverMs).toBeLessThan(7_000);
    process.stderr.write(`[sessions] a dead holder's lock taken over in ${tookOverMs} ms\n`);
  });
});
