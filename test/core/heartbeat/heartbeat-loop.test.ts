import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HeartbeatLoop, type HeartbeatLoopContext } from '../../../src/core/heartbeat/heartbeat-loop.ts';

const PERIOD = 1_000;

/** A context whose beats the test resolves by hand, recording when each one began. */
function fakeContext() {
  const began: number[] = [];
  const pending: Array<(refusal: string | undefined) => void> = [];
  let stopReason: string | undefined;
  const ctx: HeartbeatLoopContext = {
    stopReason: () => stopReason,
    beat: () => {
      began.push(Date.now());
      return new Promise((resolve) => pending.push(resolve));
    },
  };
  return {
    ctx,
    began,
    /** Completes the oldest beat still in flight. */
    finish: (refusal?: string) => pending.shift()?.(refusal),
    setStopReason: (r: string) => (stopReason = r),
  };
}

const loopWith = (ctx: HeartbeatLoopContext, lifetimeMs = 60_000, settleMs = 5_000) => new HeartbeatLoop(ctx, { periodMs: PERIOD, lifetimeMs, settleMs });

describe('HeartbeatLoop (fake clock)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('beats once a period on the grid start + k × N, the first one period after start', async () => {
    const f = fakeContext();
    const loop = loopWith(f.ctx);
    loop.start();
    expect(loop.nextBeatAt).toBe(PERIOD);
    await vi.advanceTimersByTimeAsync(PERIOD - 1);
    expect(f.began).toEqual([]);
    for (let k = 1; k <= 3; k++) {
      await vi.advanceTimersByTimeAsync(k === 1 ? 1 : PERIOD);
      expect(loop.nextBeatAt).toBe((k + 1) * PERIOD);
      f.finish();
    }
    expect(f.began).toEqual([1_000, 2_000, 3_000]);
    loop.stop('test');
    expect(await loop.stopped).toBe('test');
  });

  it('never runs two beats at once: a tick that finds one in flight is skipped', async () => {
    const f = fakeContext();
    const loop = loopWith(f.ctx);
    loop.start();
    await vi.advanceTimersByTimeAsync(3_500); // beat 1 hangs (a broker that does not PUBACK)
    expect(f.began).toEqual([1_000]);
    f.finish();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(f.began).toEqual([1_000, 4_000]);
    f.finish();
    loop.stop('test');
  });

  it('stops at the tick after the stop reason appears, without beating', async () => {
    const f = fakeContext();
    const loop = loopWith(f.ctx);
    loop.start();
    await vi.advanceTimersByTimeAsync(1_000);
    f.finish();
    f.setStopReason('watched process 42 ended');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await loop.stopped).toBe('watched process 42 ended');
    expect(f.began).toEqual([1_000]);
    expect(loop.nextBeatAt).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops when a beat comes back refused', async () => {
    const f = fakeContext();
    const loop = loopWith(f.ctx);
    loop.start();
    await vi.advanceTimersByTimeAsync(1_000);
    f.finish('refused: stale dispatch token');
    expect(await loop.stopped).toBe('refused: stale dispatch token');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps beating after a beat fails (a lock timeout is not the end of the job)', async () => {
    let n = 0;
    const loop = loopWith({ stopReason: () => undefined, beat: () => (++n === 1 ? Promise.reject(new Error('lock')) : Promise.resolve(undefined)) });
    loop.start();
    await vi.advanceTimersByTimeAsync(3_000);
    expect(n).toBe(3);
    loop.stop('test');
  });

  it('on stop, lets the beat in flight finish first (it has its seq: it must reach the wire)', async () => {
    const f = fakeContext();
    const loop = loopWith(f.ctx);
    loop.start();
    await vi.advanceTimersByTimeAsync(1_000);
    let stopped: string | undefined;
    void loop.stopped.then((r) => (stopped = r));
    loop.stop('terminated');
    await vi.advanceTimersByTimeAsync(300);
    expect(stopped).toBeUndefined();
    expect(loop.beating).toBe(true);
    f.finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe('terminated');
    expect(f.began).toEqual([1_000]);
  });

  it('does not wait forever for a beat stuck on a dead broker', async () => {
    const f = fakeContext();
    const loop = loopWith(f.ctx, 60_000, 2_000);
    loop.start();
    await vi.advanceTimersByTimeAsync(1_000);
    loop.stop('timeout');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await loop.stopped).toBe('timeout');
  });

  it("ends after its lifetime (the job's timeout_sec)", async () => {
    const loop = loopWith({ stopReason: () => undefined, beat: async () => undefined }, 2_500);
    loop.start();
    await vi.advanceTimersByTimeAsync(2_500);
    expect(await loop.stopped).toBe('timeout');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('re-bases the grid after a long stall instead of firing the missed beats back to back', async () => {
    const f = fakeContext();
    const loop = loopWith(f.ctx);
    loop.start();
    await vi.advanceTimersByTimeAsync(1_000);
    f.finish();
    vi.setSystemTime(10_000); // a suspended machine: the clock jumped, the timer did not run
    await vi.advanceTimersByTimeAsync(1_000);
    f.finish();
    await vi.advanceTimersByTimeAsync(PERIOD);
    f.finish();
    const gaps = f.began.slice(1).map((t, i) => t - f.began[i]!);
    expect(gaps.slice(1)).toEqual([PERIOD]);
    loop.stop('test');
  });

  it('the first stop reason wins; start after stop does nothing', async () => {
    const loop = loopWith({ stopReason: () => undefined, beat: async () => undefined });
    loop.stop('first');
    loop.stop('second');
    loop.start();
    expect(await loop.stopped).toBe('first');
    expect(vi.getTimerCount()).toBe(0);
  });
});
