import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isLoopback } from '../mqtt/broker-target.ts';
import { LoginThrottle } from './login-throttle.ts';

/** The cookie a login sets: a random session id, never the token. */
export const SESSION_COOKIE = 'mam_dashboard';
/** A login lasts a working day. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Sessions held at most; the oldest goes first (a flood of logins cannot grow the server). */
const MAX_SESSIONS = 1_000;
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

export interface AuthGateOptions {
  now?: () => number;
  /** A client just reached the limit of wrong tokens (once per window): someone is guessing. */
  throttled?: (client: string) => void;
}

/**
 * The client a wrong token is counted against: the socket's peer. Behind a reverse proxy that is the
 * proxy, for every user; X-Forwarded-For is not read, since anyone can send it. That is safe only
 * because the throttle never refuses the right token (see LoginThrottle).
 */
const clientOf = (req: IncomingMessage): string => req.socket.remoteAddress ?? '?';

/**
 * Who may read the page's data. Without a token (loopback only) everyone on this machine may,
 * but the Host header must name a loopback address: a page elsewhere cannot rebind its own name to
 * 127.0.0.1 and read the jobs. With `MAM_DASHBOARD_TOKEN`, a request must carry the token as
 * `Authorization: Bearer …` (scripts) or the session cookie a login set (the page). The token is
 * never written to a page, a URL or a log. Wrong tokens are throttled per client; the right token
 * and a live session are taken whatever the throttle says, so nobody can lock the owner out.
 */
export class AuthGate {
  readonly #token: string | undefined;
  readonly #sessions = new Map<string, number>();
  readonly #throttle: LoginThrottle;
  readonly #now: () => number;
  readonly #onThrottled: ((client: string) => void) | undefined;

  constructor(token: string | undefined, opts: AuthGateOptions = {}) {
    this.#token = token === '' ? undefined : token;
    this.#now = opts.now ?? Date.now;
    this.#throttle = new LoginThrottle(this.#now);
    this.#onThrottled = opts.throttled;
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

  /** No credentials at all is `unauthorized`, never `throttled`: it guesses nothing. */
  check(req: IncomingMessage): AuthVerdict {
    if (!this.#token) return 'ok';
    const auth = req.headers.authorization;
    if (auth?.startsWith('Bearer ')) return this.#verify(req, auth.slice('Bearer '.length));
    const session = cookieOf(req, SESSION_COOKIE);
    if (session !== undefined && this.#sessionValid(session)) return 'ok';
    return 'unauthorized';
  }

  /** A login with the token: a new session id for the cookie, or the verdict that refused it. */
  login(req: IncomingMessage, token: string): { session: string } | { refused: Exclude<AuthVerdict, 'ok'> } {
    if (!this.#token) return { session: '' };
    const verdict = this.#verify(req, token);
    if (verdict !== 'ok') return { refused: verdict };
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

  /**
   * The right token first, in constant time, before the throttle is consulted: throttling refuses
   * wrong guesses only. A throttled client can still tell a right guess (200) from a wrong one (429),
   * so the throttle slows no guesser who ignores it; what stops guessing is the token's length
   * (MIN_TOKEN_LENGTH, and docs/dashboard.md asks for 24 random bytes). It tells a mistyping script
   * to stop, and the log says who is guessing.
   */
  #verify(req: IncomingMessage, given: string): AuthVerdict {
    if (secretEquals(given, this.#token!)) return 'ok';
    const client = clientOf(req);
    const verdict = this.#throttle.throttled(client) ? 'throttled' : 'unauthorized';
    if (this.#throttle.fail(client)) this.#onThrottled?.(client);
    return verdict;
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
