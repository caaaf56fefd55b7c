import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineTimer } from '../../../src/core/subscriber/deadline-timer.ts';

describe('DeadlineTimer', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const timer = () => {
    const ticks: number[] = [];
    const t = new DeadlineTimer(
      () => Date.now(),
      () => ticks.push(Date.now()),
    );
    return { t, ticks };
  };

  it('fires once the deadline has passed', () => {
    const { t, ticks } = timer();
    t.arm(Date.now() + 100);
    vi.advanceTimersByTime(100);
    expect(ticks).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(ticks).toHaveLength(1);
  });

  it('keeps a timer due earlier than a later deadline (one timer per pushed-back deadline, not one per event)', () => {
    const { t, ticks } = timer();
    const start = Date.now();
    t.arm(start + 100);
    const spy = vi.spyOn(globalThis, 'setTimeout');
    for (let i = 1; i <= 50; i++) t.arm(start + 100 + i);
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
    // The early tick: the watch finds nothing due and arms again for the deadline it has now.
    vi.advanceTimersByTime(101);
    expect(ticks).toEqual([start + 101]);
    t.arm(start + 150);
    vi.advanceTimersByTime(50);
    expect(ticks).toEqual([start + 101, start + 151]);
  });

  it('moves to an earlier deadline, and null or cancel stops it', () => {
    const { t, ticks } = timer();
    const start = Date.now();
    t.arm(start + 100);
    t.arm(start + 10);
    vi.advanceTimersByTime(11);
    expect(ticks).toEqual([start + 11]);
    t.arm(start + 50);
    t.arm(null);
    t.arm(start + 60);
    t.cancel();
    vi.advanceTimersByTime(100);
    expect(ticks).toEqual([start + 11]);
  });
});
