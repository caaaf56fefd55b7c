/**
 * Waiting in tests. A wait is for something to happen (`waitUntil`); a bare `sleep` is for pacing
 * a scenario (a fault injected after a random delay), never a stand-in for an event in a check.
 */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns true; false after `ms`. */
export async function waitUntil(fn: () => boolean, ms: number, pollMs = 25): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (fn()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(pollMs);
  }
}
