import { describe, expect, it } from 'vitest';
import { isAlive } from '../../src/core/heartbeat/proc.ts';
import { type AedesTestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { beats, publish, readTimerPid, register, sleep, useHeartbeatHarness } from './heartbeat-fixtures.ts';
import { startSlowLink } from './slow-link.ts';

/** Runs are independent jobs, a few at a time, so that each suite stays under a minute. */
const PARALLEL = 4;

interface RacePlan {
  periodSec: number;
  offsetMs: number;
}

/**
 * Periods of 0.2–1 s; terminals sent k periods plus a phase after the start returned, the phases
 * spread evenly over the whole period. What matters is where the terminal's barrier falls relative
 * to the beat grid, and a publishing process's start-up (hundreds of ms on a loaded machine) shifts
 * it by an unknown amount — so every phase is tried, and some terminals land the very moment a
 * beat is due, is committing, or waits for its PUBACK.
 */
function plans(runs: number, periods: readonly number[] = [0.2, 0.3, 0.5, 0.7, 1]): RacePlan[] {
  return Array.from({ length: runs }, (_, i) => {
    const periodSec = periods[i % periods.length]!;
    const phase = ((i * 7) % runs) / runs;
    return { periodSec, offsetMs: Math.round((1 + (i % 2) + phase) * periodSec * 1000) };
  });
}

describe('terminal vs heartbeat race (contract §5: nothing of an attempt follows its terminal on the wire)', () => {
  useBrokerCleanup();
  const h = useHeartbeatHarness();

  /** One run; `timerPort` is where the timer (and only it) reaches the broker. Returns the beats seen. */
  async function race(broker: AedesTestBroker, plan: RacePlan, timerPort = broker.port, env: NodeJS.ProcessEnv = {}): Promise<number> {
    const ws = h.workspace(broker, env);
    const job = await register(ws);
    const seen = await h.watch(broker, ws, job.job_id);
    const started = await h.startBeating(ws, job.job_id, plan.periodSec, h.agent().pid!, [], { MQTT_PORT: String(timerPort) });
    expect(started.code, started.stderr).toBe(0);
    await sleep(plan.offsetMs);
    const done = await publish(ws, job.job_id, 'completed');
    expect(done.code, done.stderr).toBe(0);
    const terminalSeq = (JSON.parse(done.stdout) as { seq: number }).seq;
    expect(isAlive(started.timerPid!)).toBe(false);
    expect(readTimerPid(ws, job.job_id)).toBeUndefined();
    // Past the next due beat, for anything that would arrive late.
    await sleep(plan.periodSec * 1000 + 400);

    const all = seen();
    const at = all.findIndex((s) => s.kind === 'events' && s.payload.event === 'completed');
    expect(at, `no completed among ${JSON.stringify(all.map((s) => s.payload.event))}`).toBeGreaterThanOrEqual(0);
    // Only the terminal's own retained state may follow it.
    expect(all.slice(at + 1).map((s) => `${s.kind}:${s.payload.event}:${s.payload.seq}`)).toEqual([`state:state:${terminalSeq}`]);
    expect(beats(all).every((b) => b.payload.seq < terminalSeq)).toBe(true);
    expect(all.every((s) => s.verified)).toBe(true);
    return beats(all).length;
  }

  async function runAll(list: RacePlan[], one: (p: RacePlan) => Promise<number>): Promise<number> {
    let total = 0;
    for (let i = 0; i < list.length; i += PARALLEL) {
      total += (await Promise.all(list.slice(i, i + PARALLEL).map(one))).reduce((a, b) => a + b, 0);
    }
    return total;
  }

  it('holds in 20 runs on a direct link', { timeout: 240_000 }, async () => {
    const broker = await startAedesBroker();
    const list = plans(20);
    // The race is only a race if beats were flowing when the terminals went out.
    expect(await runAll(list, (p) => race(broker, p))).toBeGreaterThanOrEqual(list.length);
  });

  // On loopback a beat reaches the broker within a millisecond of its commit, so an unfenced
  // terminal would rarely overtake it. Behind a 400 ms link the window is most of a period: without
  // the barrier + drain of contract §5, a beat committed shortly before the terminal lands after it
  // (checked: with the stop step removed, this test fails). The drain must outlast the link's
  // round trips, hence MAM_HEARTBEAT_DRAIN_S=3 here.
  it('holds in 12 runs when the timer sits behind a 400 ms link and the terminal does not', { timeout: 240_000 }, async () => {
    const broker = await startAedesBroker();
    const link = await startSlowLink(broker.port, 400);
    try {
      const list = plans(12, [0.8, 1]);
      const beatsSeen = await runAll(list, (p) => race(broker, p, link.port, { MAM_HEARTBEAT_DRAIN_S: '3' }));
      expect(beatsSeen).toBeGreaterThanOrEqual(list.length / 2);
    } finally {
      await link.close();
    }
  });
});
