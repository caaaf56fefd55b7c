import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isAlive } from '../../src/core/heartbeat/proc.ts';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { runBinAsync } from '../helpers/cli.ts';
import { beats, publish, readRecord, readTimerPid, register, registryDir, sleep, useHeartbeatHarness, waitUntil } from './heartbeat-fixtures.ts';

describe('heartbeat timer (real processes, real broker)', () => {
  useBrokerCleanup();
  const h = useHeartbeatHarness();

  it('beats every N s with signed, increasing progress/heartbeat events, then stops at the terminal', async () => {
    const broker = await startAedesBroker();
    const ws = h.workspace(broker);
    const job = await register(ws);
    const seen = await h.watch(broker, ws, job.job_id);
    const agent = h.agent();

    const started = await h.startBeating(ws, job.job_id, 1, agent.pid!);
    expect(started.code, started.stderr).toBe(0);
    expect(started.timerPid).toBeDefined();
    expect(isAlive(started.timerPid!)).toBe(true);

    expect(await waitUntil(() => beats(seen()).length >= 3, 6_000)).toBe(true);
    const got = beats(seen());
    for (const b of got) {
      expect(b.payload).toMatchObject({ event: 'progress', detail: 'heartbeat', job_id: job.job_id });
      expect(b.payload.data).toMatchObject({ attempt_id: 1, dispatch_token: job.dispatch_token });
      expect(b.verified).toBe(true);
    }
    const seqs = got.map((b) => b.payload.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs[0]).toBeGreaterThan(1); // `started` took seq 1
    // About one period apart: the grid of start + k × N, give or take scheduling.
    for (let i = 1; i < got.length; i++) {
      const gap = got[i]!.at - got[i - 1]!.at;
      expect(gap).toBeGreaterThan(600);
      expect(gap).toBeLessThan(1_600);
    }
    // Each beat is followed by its retained state, signed the same way.
    const states = seen().filter((s) => s.kind === 'state' && s.payload.last_event === 'progress');
    expect(states.length).toBeGreaterThanOrEqual(got.length - 1);
    expect(states.every((s) => s.verified)).toBe(true);

    const done = await publish(ws, job.job_id, 'completed');
    expect(done.code, done.stderr).toBe(0);
    expect(isAlive(started.timerPid!)).toBe(false);
    expect(readTimerPid(ws, job.job_id)).toBeUndefined();
  });

  it('stops within one period of the watched process ending', async () => {
    const broker = await startAedesBroker();
    const ws = h.workspace(broker);
    const job = await register(ws);
    const seen = await h.watch(broker, ws, job.job_id);
    const agent = h.agent();
    const { timerPid, code } = await h.startBeating(ws, job.job_id, 0.5, agent.pid!);
    expect(code).toBe(0);
    expect(await waitUntil(() => beats(seen()).length >= 2, 4_000)).toBe(true);

    agent.kill('SIGKILL');
    const killedAt = Date.now();
    expect(await waitUntil(() => !isAlive(timerPid!), 2_000)).toBe(true);
    // One period to notice, plus slack for a loaded machine.
    expect(Date.now() - killedAt).toBeLessThan(500 + 700);
    await sleep(1_000);
    // A beat already in flight when the agent died may land just after; none a period later.
    expect(beats(seen()).filter((b) => b.at > killedAt + 500 + 300)).toEqual([]);
    expect(readTimerPid(ws, job.job_id)).toBeUndefined();
  });

  it('a subscriber allowing K missed beats stays while they flow, and exits 2 only after the timer died', async () => {
    const broker = await startAedesBroker();
    const ws = h.workspace(broker);
    // K = 3 misses of 0.5 s: the watch allows 1.5 s of silence.
    const job = await register(ws, ['--heartbeat', '0.5', '--heartbeat-misses', '3']);
    let exitedAt: number | undefined;
    const sub = runBinAsync('mam-subscribe', ['--job', job.job_id], ws, { timeoutMs: 20_000 }).then((r) => {
      exitedAt = Date.now();
      return r;
    });
    await sleep(500);
    const agent = h.agent();
    const { timerPid } = await h.startBeating(ws, job.job_id, 0.5, agent.pid!);
    await sleep(4_000); // well past the idle allowance: only the beats keep the watch alive
    expect(exitedAt).toBeUndefined();
    agent.kill('SIGKILL');
    const killedAt = Date.now();
    const r = await sub;
    expect(r.code, r.stderr).toBe(2);
    expect(isAlive(timerPid!)).toBe(false);
    // The last beat came at most a period before the kill; then 1.5 s of silence ends the watch.
    expect(exitedAt! - killedAt).toBeGreaterThan(800);
    expect(exitedAt! - killedAt).toBeLessThan(3_500);
    const printed = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; detail: string });
    expect(printed[0]!.event).toBe('started');
    expect(printed.filter((e) => e.detail === 'heartbeat').length).toBeGreaterThanOrEqual(6);
  });

  it("a redispatch stops the old attempt's timer; the new attempt beats despite the old barrier", async () => {
    const broker = await startAedesBroker();
    const ws = h.workspace(broker);
    const job = await register(ws);
    const seen = await h.watch(broker, ws, job.job_id);
    const agent = h.agent();
    const first = await h.startBeating(ws, job.job_id, 0.5, agent.pid!);
    expect(await waitUntil(() => beats(seen()).length >= 1, 3_000)).toBe(true);

    const re = await runBinAsync('mam', ['redispatch', '--job', job.job_id], ws);
    expect(re.code, re.stderr).toBe(0);
    const redispatchedAt = Date.now();
    expect(await waitUntil(() => !isAlive(first.timerPid!), 2_000)).toBe(true);
    await sleep(600);
    expect(beats(seen()).filter((b) => b.at > redispatchedAt + 200)).toEqual([]);

    // Attempt 1 ends late and is refused, so it fences nothing; then attempt 2 leaves a barrier of
    // its own, and attempt 3 must still beat: the barrier names the attempt, not the job.
    expect((await publish(ws, job.job_id, 'completed', ['--attempt-id', '1'])).code).toBe(5);
    expect(existsSync(path.join(registryDir(ws), `${job.job_id}.heartbeat.barrier`))).toBe(false);
    const record2 = readRecord(ws, job.job_id);
    const second = await h.startBeating(ws, job.job_id, 0.5, agent.pid!, ['--expect-dispatch-token', record2.dispatch_token]);
    expect(second.code, second.stderr).toBe(0);
    expect(await waitUntil(() => beats(seen()).some((b) => b.payload.data.attempt_id === 2), 3_000)).toBe(true);
    expect((await publish(ws, job.job_id, 'completed', ['--expect-dispatch-token', record2.dispatch_token])).code).toBe(0);
    expect(isAlive(second.timerPid!)).toBe(false);
    expect(existsSync(path.join(registryDir(ws), `${job.job_id}.heartbeat.barrier`))).toBe(true);

    expect((await runBinAsync('mam', ['redispatch', '--job', job.job_id], ws)).code).toBe(0);
    const record3 = readRecord(ws, job.job_id);
    const third = await h.startBeating(ws, job.job_id, 0.5, agent.pid!, ['--expect-dispatch-token', record3.dispatch_token]);
    expect(third.stderr).toBe('');
    expect(await waitUntil(() => beats(seen()).some((b) => b.payload.data.attempt_id === 3), 3_000)).toBe(true);
    expect((await publish(ws, job.job_id, 'error', ['--attempt-id', '3'])).code).toBe(0);
    expect(isAlive(third.timerPid!)).toBe(false);
  });

  it('a second started replaces the timer: the first is stopped before the second takes the pidfile', async () => {
    const broker = await startAedesBroker();
    const ws = h.workspace(broker);
    const job = await register(ws);
    const agent = h.agent();
    const a = await h.startBeating(ws, job.job_id, 0.5, agent.pid!);
    const b = await h.startBeating(ws, job.job_id, 0.5, agent.pid!);
    expect(a.timerPid).not.toBe(b.timerPid);
    expect(isAlive(a.timerPid!)).toBe(false);
    expect(isAlive(b.timerPid!)).toBe(true);
    expect(readTimerPid(ws, job.job_id)).toBe(b.timerPid);
    expect((await publish(ws, job.job_id, 'completed')).code).toBe(0);
  });

  it('a start that finds the attempt already fenced arms nothing', async () => {
    const broker = await startAedesBroker();
    const ws = h.workspace(broker);
    const job = await register(ws);
    writeFileSync(path.join(registryDir(ws), `${job.job_id}.heartbeat.barrier`), JSON.stringify({ attempt_id: 1, dispatch_token: job.dispatch_token }));
    const r = await h.startBeating(ws, job.job_id, 0.5, h.agent().pid!);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/heartbeat not started: attempt 1 has ended/);
    expect(r.timerPid).toBeUndefined();
  });

  it("gives up after the job's timeout_sec", async () => {
    const broker = await startAedesBroker();
    const ws = h.workspace(broker);
    const job = await register(ws, ['--timeout', '1.5']);
    const { timerPid } = await h.startBeating(ws, job.job_id, 0.4, h.agent().pid!);
    expect(isAlive(timerPid!)).toBe(true);
    expect(await waitUntil(() => !isAlive(timerPid!), 3_000)).toBe(true);
    expect(readTimerPid(ws, job.job_id)).toBeUndefined();
  });

  it('refuses a --watch-pid that names no process, before publishing anything', async () => {
    const broker = await startAedesBroker();
    const ws = h.workspace(broker);
    const job = await register(ws);
    const r = await h.startBeating(ws, job.job_id, 1, 2 ** 22 + 7);
    expect(r.code).toBe(64);
    expect(readRecord(ws, job.job_id).last_seq).toBe(0);
  });
});
