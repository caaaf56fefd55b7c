import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LockTimeout, MamError, NoSuchJob, TransitionRefused, UsageError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { BrokerError } from '../mqtt/broker-errors.ts';
import { isJobId } from '../vocabulary.ts';
import type { ActionTable } from './actions.ts';
import { type AuthGate, sessionCookie } from './auth-gate.ts';
import type { OriginPolicy } from './origin-policy.ts';
import type { SseHub, SseMessage } from './sse-hub.ts';
import type { StaticAsset } from './static-assets.ts';

/** What the HTTP layer asks of the rest of the dashboard. */
export interface DashboardModel {
  /** The whole board, as the first message of a stream and as `GET /api/state`. */
  snapshot(): Record<string, unknown>;
  /** One job with its record and timeline; undefined when the board has no such job. */
  job(jobId: string): Record<string, unknown> | undefined;
  /** Called after an action ran, so the board catches up with the record at once. */
  afterAction(jobId: string): void;
}

export interface DashboardServerOptions {
  host: string;
  port: number;
  gate: AuthGate;
  /** Which Origin a state-changing request may carry: this server's own, and `--trusted-origin`'s. */
  origins: OriginPolicy;
  hub: SseHub;
  actions: ActionTable;
  allowActions: boolean;
  assets: Map<string, StaticAsset>;
  model: DashboardModel;
  log: Logger;
}

/** A login or an action body is a few bytes; anything bigger is refused unread. */
const MAX_BODY_BYTES = 4 * 1024;

/**
 * Nothing but this server's own files and data: no inline script, no other origin, no framing. The
 * page needs nothing else, so an injected string could not load or send anything either.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * `mam dashboard`'s HTTP side (node:http, no framework): the page's files, its data as JSON, its
 * live updates as Server-Sent Events, and — only with `--allow-actions` and the token — actions
 * through the same core as the CLI. Every data route is behind the AuthGate.
 */
export class DashboardServer {
  readonly #server: Server;
  #address: AddressInfo | undefined;

  constructor(private readonly opts: DashboardServerOptions) {
    this.#server = createServer((req, res) => {
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
      this.#route(req, res).catch((err: unknown) => this.#fail(res, err));
    });
    // An idle browser keeps a stream open for hours; only requests that never finish are cut.
    this.#server.requestTimeout = 30_000;
    this.#server.headersTimeout = 10_000;
  }

  /** Rejects with a one-line MamError that names the address (a port in use, an address not of this host). */
  listen(): Promise<AddressInfo> {
    const { host, port } = this.opts;
    return new Promise((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => {
        if (err.code === 'EADDRINUSE') reject(new MamError(`port ${port} on ${host} is already in use (another mam dashboard? --port 0 picks a free one)`));
        else reject(new MamError(`cannot listen on ${host}:${port} (${err.code ?? err.message})`));
      };
      this.#server.once('error', onError);
      this.#server.listen(port, host, () => {
        this.#server.off('error', onError);
        this.#address = this.#server.address() as AddressInfo;
        resolve(this.#address);
      });
    });
  }

  /** `http://host:port`, brackets around an IPv6 address. */
  get url(): string {
    const a = this.#address;
    if (!a) throw new Error('DashboardServer: not listening');
    const host = a.address.includes(':') ? `[${a.address}]` : a.address;
    return `http://${host}:${a.port}`;
  }

  async close(): Promise<void> {
    this.opts.hub.close();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { gate } = this.opts;
    if (!gate.hostAllowed(req)) throw new HttpError(403, 'this dashboard answers to a loopback address only (set MAM_DASHBOARD_TOKEN to serve others)');
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    const route = url.pathname;
    const method = req.method ?? 'GET';

    const asset = this.opts.assets.get(route);
    if (asset && (method === 'GET' || method === 'HEAD')) return this.#sendAsset(req, res, asset);

    if (route === '/api/session' && method === 'GET') {
      return this.#json(res, 200, {
        auth_required: gate.required,
        authenticated: gate.check(req) === 'ok',
        actions_enabled: this.opts.allowActions,
      });
    }
    if (route === '/api/login' && method === 'POST') return this.#login(req, res);
    if (route === '/api/logout' && method === 'POST') {
      this.#sameOrigin(req);
      gate.logout(req);
      res.setHeader('Set-Cookie', sessionCookie('', 0));
      return this.#json(res, 200, { ok: true });
    }
    if (!route.startsWith('/api/')) throw new HttpError(404, 'not found');

    const verdict = gate.check(req);
    if (verdict === 'throttled') throw new HttpError(429, 'too many failed attempts; wait a minute');
    if (verdict !== 'ok') {
      res.setHeader('WWW-Authenticate', 'Bearer realm="mam-dashboard"');
      throw new HttpError(401, 'log in with the dashboard token (MAM_DASHBOARD_TOKEN)');
    }

    if (route === '/api/state' && method === 'GET') return this.#json(res, 200, this.opts.model.snapshot());
    if (route === '/api/events' && method === 'GET') {
      this.opts.hub.open(req, res, (): SseMessage => ({ event: 'snapshot', data: this.opts.model.snapshot() }));
      return;
    }
    const m = /^\/api\/jobs\/([^/]+)(?:\/actions\/([a-z_]+))?$/.exec(route);
    if (m) {
      const jobId = decodeURIComponent(m[1]!);
      if (!isJobId(jobId)) throw new HttpError(400, 'job id must be 8 lowercase hex characters');
      if (m[2] === undefined && method === 'GET') {
        const job = this.opts.model.job(jobId);
        if (!job) throw new HttpError(404, `no such job: ${jobId}`);
        return this.#json(res, 200, job);
      }
      if (m[2] !== undefined && method === 'POST') return this.#action(req, res, jobId, m[2]);
    }
    throw new HttpError(404, 'not found');
  }

  async #login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.#sameOrigin(req);
    const body = await readJsonBody(req);
    const token = typeof body.token === 'string' ? body.token : '';
    const result = this.opts.gate.login(req, token);
    if ('refused' in result)
      throw new HttpError(
        result.refused === 'throttled' ? 429 : 401,
        result.refused === 'throttled' ? 'too many failed attempts; wait a minute' : 'wrong token',
      );
    if (result.session !== '') res.setHeader('Set-Cookie', sessionCookie(result.session));
    return this.#json(res, 200, { ok: true });
  }

  async #action(req: IncomingMessage, res: ServerResponse, jobId: string, name: string): Promise<void> {
    if (!this.opts.allowActions || !this.opts.gate.required)
      throw new HttpError(403, 'actions are off: start mam dashboard with --allow-actions and MAM_DASHBOARD_TOKEN');
    this.#sameOrigin(req);
    await readJsonBody(req);
    const action = this.opts.actions.get(name);
    if (!action) throw new HttpError(404, `no such action: ${name}`);
    this.opts.log.info({ jobId, action: name, from: req.socket.remoteAddress }, 'dashboard action');
    let result: Awaited<ReturnType<typeof action.run>>;
    try {
      result = await action.run(jobId);
    } finally {
      this.opts.model.afterAction(jobId);
    }
    return this.#json(res, 200, { ok: true, ...result });
  }

  /**
   * A state-changing request must come from this site's own page: the cookie is SameSite=Strict
   * already; this also refuses a request whose browser says it came from elsewhere, and one that is
   * not JSON (a plain HTML form cannot send JSON, and a cross-site fetch of it needs a preflight
   * that this server never grants). Behind a reverse proxy the Origin names the proxy, not the Host
   * this server sees: only the origins the operator trusted are taken then.
   */
  #sameOrigin(req: IncomingMessage): void {
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') throw new HttpError(403, 'cross-site request refused');
    const origin = req.headers.origin;
    if (origin !== undefined && !this.opts.origins.accepts(origin, req.headers.host)) throw new HttpError(403, 'cross-origin request refused');
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) throw new HttpError(415, 'expected application/json');
  }

  #sendAsset(req: IncomingMessage, res: ServerResponse, asset: StaticAsset): void {
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('ETag', asset.etag);
    if (req.headers['if-none-match'] === asset.etag) {
      res.writeHead(304).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': asset.contentType, 'Content-Length': asset.body.length });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
  }

  #json(res: ServerResponse, status: number, value: unknown): void {
    const body = JSON.stringify(value);
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }

  #fail(res: ServerResponse, err: unknown): void {
    const status = statusOf(err);
    if (status === 500) this.opts.log.error({ err }, 'dashboard request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    this.#json(res, status, { error: err instanceof Error ? err.message.split('\n')[0] : String(err) });
  }
}

/**
 * An action's typed error as HTTP: the broker not acknowledging a decision is the gateway's fault
 * (502), a registry lock held too long is worth a retry (503); any other refusal of the core — a
 * terminal job, no request waiting — is a conflict with the job's state (409).
 */
function statusOf(err: unknown): number {
  if (err instanceof HttpError) return err.status;
  if (err instanceof NoSuchJob) return 404;
  if (err instanceof UsageError) return 400;
  if (err instanceof BrokerError) return 502;
  if (err instanceof LockTimeout) return 503;
  if (err instanceof TransitionRefused || err instanceof MamError) return 409;
  return 500;
}

async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'request body too large');
    chunks.push(chunk);
  }
  if (size === 0) return {};
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    throw new HttpError(400, 'body is not JSON');
  }
}
