import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../../src/core/config/config.ts';
import { startDashboard } from '../../src/core/dashboard/dashboard.ts';
import { createLogger } from '../../src/core/log.ts';
import { Registry } from '../../src/core/registry/registry.ts';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { runBinAsync } from '../helpers/cli.ts';
import { brokerWorkspace } from '../publisher/publish-fixtures.ts';
import { startDashboardProcess } from './dashboard-fixtures.ts';

/**
 * The dashboard behind a reverse proxy (docs/dashboard.md, "Behind a reverse proxy"): the browser's
 * Origin names the proxy while the Host is the dashboard's own address, and every client comes
 * from the proxy's address, so one client's wrong guesses must never refuse the owner's token.
 */

const TOKEN = 'test-dashboard-token-0123456789';
const PROXY = 'https://mam.example.com';

let broker: AedesTestBroker;
beforeAll(async () => {
  broker = await startAedesBroker();
});
afterAll(() => broker.stop());

async function dashboard(opts: { trustedOrigins?: string[] } = {}) {
  const ws = brokerWorkspace(broker.port);
  const config = loadConfig(ws.env, ws.root);
  const running = await startDashboard({
    config,
    registry: new Registry(config),
    log: createLogger('test', 'silent'),
    host: '127.0.0.1',
    port: 0,
    token: TOKEN,
    allowActions: false,
    trustedOrigins: opts.trustedOrigins,
  });
  onTestFinished(() => running.close());
  return running.url;
}

interface Reply {
  status: number;
  cookie: string | undefined;
  body: string;
}

/**
 * A request as a proxy forwards it: headers exactly as given (fetch would set its own Host), from a
 * chosen loopback address (Linux routes all of 127/8 to lo), so that two clients differ.
 */
function send(method: 'GET' | 'POST', url: string, path: string, body: unknown, headers: Record<string, string> = {}, from = '127.0.0.1'): Promise<Reply> {
  const text = body === undefined ? '' : JSON.stringify(body);
  const framing: Record<string, string> = body === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) };
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, localAddress: from, headers: { ...framing, ...headers } }, (res) => {
      let data = '';
      res.setEncoding('utf8').on('data', (d: string) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, cookie: res.headers['set-cookie']?.[0]?.split(';')[0], body: data }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

const post = (url: string, path: string, body: unknown, headers: Record<string, string> = {}, from?: string) => send('POST', url, path, body, headers, from);
const state = (url: string, headers: Record<string, string>, from?: string) => send('GET', url, '/api/state', undefined, headers, from);
const login = (url: string, token: string, headers: Record<string, string> = {}, from?: string) => post(url, '/api/login', { token }, headers, from);
const hostOf = (url: string) => new URL(url).host;

describe('mam dashboard behind a reverse proxy: --trusted-origin', () => {
  it('refuses a login whose Origin names the proxy (403) unless that origin is trusted; any other origin stays 403', async () => {
    const plain = await dashboard();
    const proxied = { Origin: PROXY, Host: hostOf(plain) };
    expect((await login(plain, TOKEN, proxied)).status).toBe(403);
    // The page's own origin, as before.
    expect((await login(plain, TOKEN, { Origin: plain, Host: hostOf(plain) })).status).toBe(200);

    const url = await dashboard({ trustedOrigins: [PROXY] });
    const through = await login(url, TOKEN, { Origin: PROXY, Host: hostOf(url) });
    expect(through.status).toBe(200);
    expect(through.cookie).toMatch(/^mam_dashboard=[\w-]{43}$/);
    const logout = await post(url, '/api/logout', {}, { Origin: PROXY, Host: hostOf(url), Cookie: through.cookie! });
    expect(logout.status).toBe(200);

    // Exact origins: another host, another port or scheme of the same host are not the proxy.
    for (const other of ['https://evil.example.com', `${PROXY}:8443`, 'http://mam.example.com', 'https://mam.example.com.evil.example']) {
      const refused = await login(url, TOKEN, { Origin: other, Host: hostOf(url) });
      expect(refused.status, other).toBe(403);
      expect(refused.cookie).toBeUndefined();
    }
    expect((await login(url, TOKEN, { Origin: url, Host: hostOf(url) })).status).toBe(200);
  });

  it('mam dashboard takes the flag, or MAM_DASHBOARD_TRUSTED_ORIGINS when no flag is given', async () => {
    const ws = brokerWorkspace(broker.port, { MAM_DASHBOARD_TOKEN: TOKEN });
    const flag = await startDashboardProcess(ws, ['--trusted-origin', 'https://other.example', '--trusted-origin', PROXY]);
    expect((await login(flag.url, TOKEN, { Origin: PROXY, Host: hostOf(flag.url) })).status).toBe(200);
    expect((await login(flag.url, TOKEN, { Origin: 'https://third.example', Host: hostOf(flag.url) })).status).toBe(403);
    expect(await flag.stop()).toBe(0);

    const env = await startDashboardProcess(ws, [], { MAM_DASHBOARD_TRUSTED_ORIGINS: ` https://other.example, ${PROXY} ` });
    expect((await login(env.url, TOKEN, { Origin: PROXY, Host: hostOf(env.url) })).status).toBe(200);
    expect(await env.stop()).toBe(0);
  });

  it('a value that is not an exact origin is one line and exit 64 (the flag) or 1 (the variable, as every variable)', async () => {
    const ws = brokerWorkspace(broker.port, { MAM_DASHBOARD_TOKEN: TOKEN });
    const slash = await runBinAsync('mam', ['dashboard', '--port', '0', '--trusted-origin', `${PROXY}/`], ws);
    expect(slash.code).toBe(64);
    expect(slash.stderr).toBe(
      'ERROR: --trusted-origin: "https://mam.example.com/" is not an origin as a browser sends it: write https://mam.example.com (no path, no trailing slash, no default port)\n',
    );
    const bare = await runBinAsync('mam', ['dashboard', '--port', '0', '--trusted-origin', 'mam.example.com'], ws);
    expect(bare.code).toBe(64);
    expect(bare.stderr).toBe('ERROR: --trusted-origin: "mam.example.com" is not an origin: expected scheme://host[:port], such as https://mam.example.com\n');
    const variable = await runBinAsync('mam', ['dashboard', '--port', '0'], ws, { env: { MAM_DASHBOARD_TRUSTED_ORIGINS: `${PROXY},ftp://files.example` } });
    expect(variable.code).toBe(1);
    expect(variable.stderr).toBe('ERROR: MAM_DASHBOARD_TRUSTED_ORIGINS: "ftp://files.example" is not an http or https origin\n');
  });
});

describe('mam dashboard: the login throttle cannot lock the owner out', () => {
  it("after ten wrong tokens a client's wrong guesses get 429, and the right token still gets in, from it and from any other", async () => {
    const url = await dashboard();
    const earlier = await login(url, TOKEN);
    expect(earlier.status).toBe(200);

    // Behind a proxy the guesser and the owner share an address: 127.0.0.1 plays both here.
    for (let i = 0; i < 10; i++) expect((await login(url, `guess-${i}-xxxxxxxxxxxxxxxx`)).status).toBe(401);
    for (let i = 10; i < 40; i++) {
      const guess = await login(url, `guess-${i}-xxxxxxxxxxxxxxxx`);
      expect(guess.status).toBe(429);
      expect(guess.cookie).toBeUndefined();
      expect(JSON.parse(guess.body)).toEqual({ error: 'too many failed attempts; wait a minute' });
    }
    expect((await state(url, { Authorization: 'Bearer guess-bearer-xxxxxxxxxxxxxxxx' })).status).toBe(429);

    const owner = await login(url, TOKEN);
    expect(owner.status).toBe(200);
    expect(owner.cookie).toMatch(/^mam_dashboard=[\w-]{43}$/);
    expect((await state(url, { Cookie: owner.cookie! })).status).toBe(200);
    expect((await state(url, { Cookie: earlier.cookie! })).status).toBe(200);
    expect((await state(url, { Authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    // No credentials guess nothing: the page is asked to log in, not told to wait.
    expect((await state(url, {})).status).toBe(401);
    // Still throttled for wrong guesses: the right token did not reset the count.
    expect((await login(url, 'guess-after-xxxxxxxxxxxxxxxx')).status).toBe(429);

    // Per client: another address is not throttled by the first one's guesses.
    expect((await login(url, 'guess-other-xxxxxxxxxxxxxxxx', {}, '127.0.0.2')).status).toBe(401);
    expect((await login(url, TOKEN, {}, '127.0.0.2')).status).toBe(200);
  });
});
