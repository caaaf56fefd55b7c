import { describe, expect, it } from 'vitest';
import { FAILURE_WINDOW_MS, LoginThrottle, MAX_CLIENTS, MAX_FAILURES } from '../../src/core/dashboard/login-throttle.ts';

/** The throttle's table as a unit, on a clock the test moves (its HTTP side: dashboard-proxy.test.ts). */
describe('LoginThrottle', () => {
  it('throttles a client after MAX_FAILURES wrong tokens, says so once, and forgets it after the window', () => {
    let now = 1_000_000;
    const throttle = new LoginThrottle(() => now);
    const reached: number[] = [];
    for (let i = 1; i <= MAX_FAILURES + 5; i++) {
      expect(throttle.throttled('10.0.0.1')).toBe(i > MAX_FAILURES);
      if (throttle.fail('10.0.0.1')) reached.push(i);
    }
    expect(reached).toEqual([MAX_FAILURES]);
    expect(throttle.throttled('10.0.0.2')).toBe(false);
    now += FAILURE_WINDOW_MS + 1;
    expect(throttle.throttled('10.0.0.1')).toBe(false);
  });

  it('holds at most MAX_CLIENTS: a flood of addresses evicts the oldest windows, one at a time, not the whole table', () => {
    let now = 1_000_000;
    const throttle = new LoginThrottle(() => now);
    const guess = (client: string) => {
      for (let i = 0; i < MAX_FAILURES; i++) throttle.fail(client);
    };
    guess('victim-of-eviction');
    now += 1;
    for (let i = 0; i < MAX_CLIENTS; i++) guess(`10.1.${i >> 8}.${i & 255}`);
    expect(throttle.size).toBe(MAX_CLIENTS);
    // The oldest went; every later one is still throttled.
    expect(throttle.throttled('victim-of-eviction')).toBe(false);
    for (let i = 0; i < MAX_CLIENTS; i++) expect(throttle.throttled(`10.1.${i >> 8}.${i & 255}`)).toBe(true);

    // Expired windows go before any live one is evicted.
    now += FAILURE_WINDOW_MS + 1;
    guess('late');
    expect(throttle.size).toBe(1);
    expect(throttle.throttled('late')).toBe(true);
  });
});
