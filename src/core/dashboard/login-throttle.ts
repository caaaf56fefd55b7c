/** Wrong tokens per client within a window before its further wrong tokens are answered 429. */
export const MAX_FAILURES = 10;
export const FAILURE_WINDOW_MS = 60_000;
/**
 * Clients remembered at most. A flood from many addresses evicts the oldest windows first (and so
 * frees its own earliest entries soonest), never the whole table at once.
 */
export const MAX_CLIENTS = 1_000;

interface Window {
  count: number;
  since: number;
}

/**
 * Counts wrong tokens per client address in fixed windows. It is only ever asked about a token
 * that was wrong: the AuthGate takes the right token before it looks here, so no number of wrong
 * guesses, from the owner's own address or the proxy's, can refuse the owner.
 */
export class LoginThrottle {
  /** In order of window start: a renewed window is re-inserted at the end. */
  readonly #windows = new Map<string, Window>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Clients held now (at most MAX_CLIENTS). */
  get size(): number {
    return this.#windows.size;
  }

  /** True while `client` has had MAX_FAILURES wrong tokens in its current window. */
  throttled(client: string): boolean {
    const w = this.#current(client);
    return w !== undefined && w.count >= MAX_FAILURES;
  }

  /** Counts a wrong token of `client`; true when this one reached the limit (to be logged once a window). */
  fail(client: string): boolean {
    let w = this.#current(client);
    if (!w) {
      this.#dropExpired();
      if (this.#windows.size >= MAX_CLIENTS) this.#windows.delete(this.#windows.keys().next().value!);
      w = { count: 0, since: this.now() };
      this.#windows.set(client, w);
    }
    return ++w.count === MAX_FAILURES;
  }

  #current(client: string): Window | undefined {
    const w = this.#windows.get(client);
    if (w && this.now() - w.since > FAILURE_WINDOW_MS) {
      this.#windows.delete(client);
      return undefined;
    }
    return w;
  }

  /** The map is in window order, so the expired ones are at its head. */
  #dropExpired(): void {
    const now = this.now();
    for (const [client, w] of this.#windows) {
      if (now - w.since <= FAILURE_WINDOW_MS) return;
      this.#windows.delete(client);
    }
  }
}
