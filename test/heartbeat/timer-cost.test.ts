import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { beats, publish, register, sleep, useHeartbeatHarness, waitUntil } from './heartbeat-fixtures.ts';

/** Seconds of steady beating measured; MAM_HEARTBEAT_COST_SEC=30 for the numbers quoted in the docs. */
const WINDOW_SEC = Number(process.env.MAM_HEARTBEAT_COST_SEC ?? 6);
/** Linux's USER_HZ: utime and stime in /proc/<pid>/stat count these. */
const CLOCK_TICKS = 100;

function usage(pid: number): { rssKiB: number; cpuMs: number } {
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After `pid (comm)`: state is field 3, utime 14 and stime 15 (1-based, man 5 proc).
  const ticks = Number(fields[14 - 3]) + Number(fields[15 - 3]);
  return { rssKiB: Number(rss), cpuMs: (ticks * 1000) / CLOCK_TICKS };
}

describe('heartbeat timer cost (it runs beside every agent)', () => {
  useBrokerCleanup();
  const h = useHeartbeatHarness();

  it(`stays small and idle between beats over ${WINDOW_SEC} s at a 1 s period`, { timeout: (WINDOW_SEC + 30) * 1000 }, async () => {
    const broker = await startAedesBroker();
    const ws = h.workspace(broker);
    const job = await register(ws);
    const seen = await h.watch(broker, ws, job.job_id);
    const { timerPid } = await h.startBeating(ws, job.job_id, 1, h.agent().pid!);
    // Past start-up (module loading, the first connection): measure the steady state only.
    expect(await waitUntil(() => beats(seen()).length >= 2, 10_000)).toBe(true);
    const before = usage(timerPid!);
    const beatsBefore = beats(seen()).length;
    let peakRssKiB = before.rssKiB;
    for (let t = 0; t < WINDOW_SEC; t++) {
      await sleep(1_000);
      peakRssKiB = Math.max(peakRssKiB, usage(timerPid!).rssKiB);
    }
    const after = usage(timerPid!);
    const n = beats(seen()).length - beatsBefore;
    const cpuPerBeatMs = (after.cpuMs - before.cpuMs) / Math.max(n, 1);
    console.log(
      `heartbeat timer: RSS ${(before.rssKiB / 1024).toFixed(1)} MiB at start of window, peak ${(peakRssKiB / 1024).toFixed(1)} MiB; ` +
        `CPU ${after.cpuMs - before.cpuMs} ms over ${WINDOW_SEC} s for ${n} beats (${cpuPerBeatMs.toFixed(1)} ms a beat, ` +
        `${(((after.cpuMs - before.cpuMs) / (WINDOW_SEC * 1000)) * 100).toFixed(2)} % of a core); start-up CPU ${before.cpuMs} ms`,
    );
    expect(n).toBeGreaterThanOrEqual(WINDOW_SEC - 1);
    // Loose bounds, so that a loaded CI machine does not flake, yet a leak or a busy loop fails.
    expect(peakRssKiB).toBeLessThan(120 * 1024);
    expect(cpuPerBeatMs).toBeLessThan(60);
    expect((await publish(ws, job.job_id, 'completed')).code).toBe(0);
  });
});
