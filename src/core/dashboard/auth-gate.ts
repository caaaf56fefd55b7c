import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isLoopback } from '../mqtt/broker-target.ts';

/** The cookie a login sets: a random session id, never the token. */
export const SESSION_COOKIE = 'mam_dashboard';
/** A login lasts a working day. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Sessions held at most; the oldest goes first (a flood of logins cannot grow the server). */
const MAX_SESSIONS = 1_000;
/** Failed logins (or bearer tokens) per client address and window, before 429. */
const MAX_FAILURES = 10;
const FAILURE_WINDOW_MS = 60_000;
/** A shorter token is refused at start: it could be guessed over the network. */
export const MIN_TOKEN_LENGTH = 16;

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Constant-time equality of two secrets of any lengths (their digests are compared). */
export function secretEquals(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** `isLoopback` for what a user types or a browser sends: any case, an IPv6 address in brackets (`[::1]`). */
export function isLoopbackHost(host: string): boolean {
  return isLoopback(host.replace(/^\[|\]$/g, '').toLowerCase());
}

export type AuthVerdict = 'ok' | 'unauthorized' | 'throttled';

/**
 * Who may read the page's data. Without a token (loopback only) everyone on this machine may,
 * but the Host header must name a loopback address: a page elsewhere cannot rebind its own name to
 * 127.0.0.1 and read the jobs. With `MAM_DASHBOARD_TOKEN`, a request must carry the token as
 * `Authorization: Bearer …` (scripts) or the session cookie a login set (the page). The token is
 * never written to a page, a URL or a log.
 */
export class AuthGate {
  readonly #token: string | undefined;
  readonly #sessions = new Map<string, number>();
  readonly #failures = new Map<string, { count: number; since: number }>();
  readonly #now: () => number;

  constructor(token: string | undefined, now: () => number = Date.now) {
    this.#token = token === '' ? undefined : token;
    this.#now = now;
  }

  /** True when requests must authenticate. */
  get required(): boolean {
    return this.#token !== undefined;
  }

  /** A request's Host header is acceptable: any when a token guards the data, else loopback names only. */
  hostAllowed(req: IncomingMessage): boolean {
    if (this.required) return true;
    const host = req.headers.host;
    if (!host) return false;
    const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
    return isLoopbackHost(name);
  }

  check(req: IncomingMessage): AuthVerdict {
    if (!this.#token) return 'ok';
    if (this.#throttled(req)) return 'throttled';
    const auth = req.headers.authorization;
    if (auth?.startsWith('Bearer ')) {
      if (secretEquals(auth.slice('Bearer '.length), this.#token)) return 'ok';
      this.#fail(req);
      return 'unauthorized';
    }
    const session = cookieOf(req, SESSION_COOKIE);
    if (session !== undefined && this.#sessionValid(session)) return 'ok';
    return 'unauthorized';
  }

  /** A login with the token: a new session id for the cookie, or the verdict that refused it. */
  login(req: IncomingMessage, token: string): { session: string } | { refused: Exclude<AuthVerdict, 'ok'> } {
    if (!this.#token) return { session: '' };
    if (this.#throttled(req)) return { refused: 'throttled' };
    if (!secretEquals(token, this.#token)) {
      this.#fail(req);
      return { refused: 'unauthorized' };
    }
    const session = randomBytes(32).toString('base64url');
    if (this.#sessions.size >= MAX_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value!);
    this.#sessions.set(session, this.#now() + SESSION_TTL_MS);
    return { session };
  }

  logout(req: IncomingMessage): void {
    const session = cookieOf(req, SESSION_COOKIE);
    if (session !== undefined) this.#sessions.delete(session);
  }

  #sessionValid(session: string): boolean {
    // A lookup by the id itself: the map's hashing does not leak which ids exist through timing
    // any more than a random 256-bit id can be guessed.
    const expires = this.#sessions.get(session);
    if (expires === undefined) return false;
    if (this.#now() >= expires) {
      this.#sessions.delete(session);
      return false;
    }
    return true;
  }

  #throttled(req: IncomingMessage): boolean {
    const who = req.socket.remoteAddress ?? '?';
    const f = this.#failures.get(who);
    if (!f) return false;
    if (this.#now() - f.since > FAILURE_WINDOW_MS) {
      this.#failures.delete(who);
      return false;
    }
    return f.count >= MAX_FAILURES;
  }

  #fail(req: IncomingMessage): void {
    const who = req.socket.remoteAddress ?? '?';
    const f = this.#failures.get(who);
    if (f && this.#now() - f.since <= FAILURE_WINDOW_MS) f.count++;
    else {
      if (this.#failures.size >= MAX_SESSIONS) this.#failures.clear();
      this.#failures.set(who, { count: 1, since: this.#now() });
    }
  }
}

export function cookieOf(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), the whole site. */
export function sessionCookie(session: string, maxAgeMs: number = SESSION_TTL_MS): string {
  return `${SESSION_COOKIE}=${session}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.floor(maxAgeMs / 1000)}`;
}
