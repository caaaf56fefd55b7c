import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NothingPickable } from '../../../src/core/errors.ts';
import { jobRecordSchema } from '../../../src/core/registry/job-record.ts';
import { readPickIndex, recordSetDigest } from '../../../src/core/registry/pick-index.ts';
import { Registry } from '../../../src/core/registry/registry.ts';
import { sleep } from '../../helpers/wait.ts';
import { makeWorkspace, runBinAsync, type Workspace } from '../../helpers/cli.ts';
import { REGISTRY_WORKER, allAuditLines, bundleRegistry, mulberry32, printedJobIds, spawnBin, spawnNode, type Spawned } from './fixtures/processes.ts';
import { input } from './registry-fixtures.ts';

// Real processes against one registry: the registry lock is the only thing keeping them apart.
let ws: Workspace;
let registry: Registry;
beforeEach(() => {
  ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: '1' });
  registry = new Registry({ registryDir: path.join(ws.root, '.mam', 'jobs'), logDir: path.join(ws.root, '.mam', 'logs') }, () => undefined);
});
afterEach(() => ws.cleanup());

async function registerInProcess(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await registry.register(input({ brief: `job ${i}` }))).job_id);
  return ids;
}

/** `mam-pick` until exit 4; the job ids it claimed. */
async function pickUntilEmpty(session: string): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const r = await runBinAsync('mam-pick', ['--agent-session', session], ws);
    if (r.code === 4) return ids;
    expect(r, r.stderr).toMatchObject({ code: 0 });
    ids.push(...printedJobIds(r.stdout));
  }
}

/** Every record file parses and validates, and names itself. */
function expectAllRecordsValid(): string[] {
  const files = readdirSync(registry.paths.registryDir).filter((f) => /^[0-9a-f]{8}\.json$/.test(f));
  for (const f of files) {
    const record = jobRecordSchema.parse(JSON.parse(readFileSync(path.join(registry.paths.registryDir, f), 'utf8')));
    expect(`${record.job_id}.json`).toBe(f);
  }
  expect(registry.list().corrupt).toEqual([]);
  return files;
}

describe('concurrent processes', () => {
  it('6 pickers, 60 pending jobs: every job claimed exactly once', { timeout: 120_000 }, async () => {
    const ids = await registerInProcess(60);
    const sessions = ['s1', 's2', 's3', 's4', 's5', 's6'];
    const claimed = await Promise.all(sessions.map(pickUntilEmpty));
    const all = claimed.flat();
    expect(all).toHaveLength(60);
    expect(new Set(all)).toEqual(new Set(ids));
    sessions.forEach((session, i) => {
      for (const id of claimed[i]!) expect(registry.read(id)).toMatchObject({ status: 'running', agent_session: session, transition_seq: 1 });
    });
  });

  it('6 processes registering 15 jobs each at once: 90 valid records, index consistent', { timeout: 60_000 }, async () => {
    const bundle = await bundleRegistry(ws.root);
    const registrar = async (n: number): Promise<string[]> => {
      const args = [REGISTRY_WORKER, bundle, registry.paths.registryDir, registry.paths.logDir, '15', `r${n}`];
      const r = await spawnNode(args, ws).done;
      expect(r, r.stderr).toMatchObject({ code: 0 });
      return r.stdout.split('\n').filter((l) => l !== '');
    };
    const ids = (await Promise.all([1, 2, 3, 4, 5, 6].map(registrar))).flat();
    expect(new Set(ids).size).toBe(90);
    expect(expectAllRecordsValid()).toHaveLength(90);
    // The index as the registrars left it, before anything could rebuild it.
    const index = readPickIndex(registry.paths.pickIndex);
    expect(index?.records_digest).toBe(recordSetDigest(ids));
    expect(new Set(index?.pending.map((e) => e.job_id))).toEqual(new Set(ids));
    const picked = new Set<string>();
    for (let i = 0; i < 90; i++) picked.add((await registry.pick('S')).job_id);
    expect(picked.size).toBe(90);
    await expect(registry.pick('S')).rejects.toBeInstanceOf(NothingPickable);
    expect((await runBinAsync('mam-pick', ['--agent-session', 'S'], ws)).code).toBe(4);
  });
});

describe('crash safety: SIGKILL at random moments', () => {
  it('storms of register and pick, ~100 kills: records valid, no double claim, no torn audit line', { timeout: 120_000 }, async () => {
    const seed = Number(process.env.MAM_TEST_SEED ?? Date.now() % 2 ** 31);
    console.log(`crash storm seed ${seed} (replay with MAM_TEST_SEED=${seed})`);
    const rand = mulberry32(seed);
    await registerInProcess(30);

    const KILLS = 100;
    const PARALLEL = 6;
    const deadline = Date.now() + 40_000;
    let kills = 0;
    let n = 0;
    let stalled = 0; // processes that waited out a lock left by a killed one
    const picks: Array<{ session: string; stdout: string }> = [];
    const live = new Set<Spawned>();
    // Kills at random moments rarely land inside the few milliseconds a command holds the lock, so
    // a few are aimed there: while the lock exists, one live process (maybe its holder) dies.
    let aimed = 0;
    let lastAimed = 0;
    const sniper = setInterval(() => {
      if (aimed >= 3 || Date.now() - lastAimed < 6_000 || kills >= KILLS || live.size === 0) return;
      if (!existsSync(registry.paths.lock) || rand() > 0.3) return;
      const victims = [...live];
      if (!victims[Math.floor(rand() * victims.length)]!.kill()) return;
      aimed++;
      kills++;
      lastAimed = Date.now();
    }, 2);
    const worker = async () => {
      while (kills < KILLS && Date.now() < deadline) {
        const isPick = rand() < 0.5;
        const session = `k${n++}`;
        const proc: Spawned = isPick ? spawnBin('mam-pick', ['--agent-session', session], ws) : spawnBin('mam-register', ['--brief', session], ws);
        const killAfter = rand() < 0.7 ? rand() * 600 : undefined;
        const timer = killAfter === undefined ? undefined : setTimeout(() => proc.kill() && kills++, killAfter);
        live.add(proc);
        const r = await proc.done;
        live.delete(proc);
        clearTimeout(timer);
        if (isPick) picks.push({ session, stdout: r.stdout });
        if (r.signal === null && r.ms > 4_000) stalled++;
        // Whoever was not killed ends with a contract code, never a crash or a lock timeout.
        if (r.signal === null) expect([0, 4], `${session}: ${r.stderr}`).toContain(r.code);
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker)).finally(() => clearInterval(sniper));
    console.log(`crash storm: ${n} processes, ${kills} killed (${aimed} while the lock existed), ${stalled} waited > 4 s for it`);
    expect(kills).toBeGreaterThanOrEqual(50);

    expectAllRecordsValid();
    const claims = picks.flatMap((p) => printedJobIds(p.stdout).map((id) => ({ id, session: p.session })));
    expect(new Set(claims.map((c) => c.id)).size).toBe(claims.length);
    for (const c of claims) expect(registry.read(c.id)).toMatchObject({ status: 'running', agent_session: c.session });
    allAuditLines(registry.paths.logDir);

    // Afterwards the lock is usable within 10 s, whatever the storm left behind.
    let started = Date.now();
    const fresh = await runBinAsync('mam-register', ['--brief', 'after the storm'], ws);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    started = Date.now();
    expect((await runBinAsync('mam-pick', ['--agent-session', 'after'], ws)).code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);

    // The index survived too: every job still pending is picked exactly once, then nothing.
    const pending = registry
      .list()
      .records.filter((r) => r.status === 'pending')
      .map((r) => r.job_id);
    const picked: string[] = [];
    for (let i = 0; i < pending.length; i++) picked.push((await registry.pick('final')).job_id);
    expect(new Set(picked)).toEqual(new Set(pending));
    await expect(registry.pick('final')).rejects.toBeInstanceOf(NothingPickable);
  });

  it('a lock directory left behind 60 s ago does not hold anyone up', { timeout: 30_000 }, async () => {
    await registerInProcess(1);
    const lock = registry.paths.lock;
    mkdirSync(lock);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    const started = Date.now();
    const r = await runBinAsync('mam-pick', ['--agent-session', 'S'], ws);
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it('a fresh lock with a live holder makes a command wait, then it goes through once released', { timeout: 30_000 }, async () => {
    await registerInProcess(1);
    const lock = registry.paths.lock;
    mkdirSync(lock);
    // A live holder keeps its lock's mtime fresh.
    const holder = setInterval(() => {
      const now = new Date();
      utimesSync(lock, now, now);
    }, 500);
    try {
      const started = Date.now();
      const run = runBinAsync('mam-pick', ['--agent-session', 'S'], ws);
      let finished = false;
      void run.then(() => (finished = true));
      await sleep(3_000);
      expect(finished).toBe(false);
      clearInterval(holder);
      rmSync(lock, { recursive: true });
      const r = await run;
      expect(r.code, r.stderr).toBe(0);
      expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    } finally {
      clearInterval(holder);
    }
  });
});
