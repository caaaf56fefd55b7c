import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { askPermission } from '../../src/core/control/permission-request.ts';
import { checkExposure, type RunningDashboard, startDashboard } from '../../src/core/dashboard/dashboard.ts';
import { loadConfig } from '../../src/core/config/config.ts';
import { ConfigError, UsageError } from '../../src/core/errors.ts';
import { createLogger } from '../../src/core/log.ts';
import { Registry } from '../../src/core/registry/registry.ts';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { runBinAsync } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { waitUntil } from '../helpers/wait.ts';
import { auditOf, brokerWorkspace, eventsTopicOf, publishOk, recordOf, register } from '../publisher/publish-fixtures.ts';
import { forgedEvent, startDashboardProcess } from './dashboard-fixtures.ts';

const TOKEN = 'test-dashboard-token-0123456789';

let broker: AedesTestBroker;
beforeAll(async () => {
  broker = await startAedesBroker();
});
afterAll(() => broker.stop());

async function dashboard(opts: { token?: string; allowActions?: boolean } = {}) {
  const ws = brokerWorkspace(broker.port);
  const config = loadConfig(ws.env, ws.root);
  const registry = new Registry(config);
  const running: RunningDashboard = await startDashboard({
    config,
    registry,
    log: createLogger('test', 'silent'),
    host: '127.0.0.1',
    port: 0,
    token: opts.token,
    allowActions: opts.allowActions ?? false,
    pushIntervalMs: 50,
  });
  onTestFinished(() => running.close());
  return { ws, config, registry, url: running.url, board: running.board };
}

/** A request with any Host header (fetch would not send one of ours). */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The stream a page reads: events as they come, parsed. */
async function openStream(url: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  onTestFinished(() => controller.abort());
  const res = await fetch(`${url}/api/events`, { headers, signal: controller.signal });
  const events: Array<{ event: string; data: any }> = [];
  if (res.ok) {
    void (async () => {
      const decoder = new TextDecoder();
      let buf = '';
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buf += decoder.decode(chunk, { stream: true });
          let end = buf.indexOf('\n\n');
          while (end >= 0) {
            const frame = buf.slice(0, end);
            buf = buf.slice(end + 2);
            const event = /^event: (.*)$/m.exec(frame)?.[1];
            const data = /^data: (.*)$/m.exec(frame)?.[1];
            if (event && data) events.push({ event, data: JSON.parse(data) });
            end = buf.indexOf('\n\n');
          }
        }
      } catch {
        // aborted at the end of the test
      }
    })();
  }
  return { res, events };
}

describe('mam dashboard: exposure', () => {
  it('refuses another host without a token, actions without a token, and a short token', () => {
    expect(() => checkExposure('0.0.0.0', undefined, false)).toThrow(UsageError);
    expect(() => checkExposure('192.168.1.5', undefined, false)).toThrow(/MAM_DASHBOARD_TOKEN/);
    expect(() => checkExposure('127.0.0.1', undefined, true)).toThrow(/--allow-actions needs MAM_DASHBOARD_TOKEN/);
    expect(() => checkExposure('0.0.0.0', 'short', false)).toThrow(ConfigError);
    expect(() => checkExposure('127.0.0.1', undefined, false)).not.toThrow();
    expect(() => checkExposure('localhost', undefined, false)).not.toThrow();
    expect(() => checkExposure('::1', undefined, false)).not.toThrow();
    expect(() => checkExposure('0.0.0.0', TOKEN, true)).not.toThrow();
  });

  it('the command says so in one line and exits 64', async () => {
    const ws = brokerWorkspace(broker.port);
    const r = await runBinAsync('mam', ['dashboard', '--host', '0.0.0.0', '--port', '0'], ws);
    expect(r.code).toBe(64);
    expect(r.stderr).toBe('ERROR: --host 0.0.0.0 is not a loopback address: set MAM_DASHBOARD_TOKEN to serve the dashboard beyond this machine\n');
  });

  it('with the token, serves another host, and warns that plain HTTP is readable on the way', async () => {
    const ws = brokerWorkspace(broker.port);
    const dash = await startDashboardProcess(ws, ['--host', '0.0.0.0'], { MAM_DASHBOARD_TOKEN: TOKEN });
    expect(dash.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    const port = new URL(dash.url).port;
    expect((await fetch(`http://127.0.0.1:${port}/api/state`)).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${port}/api/state`, { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect(await dash.stop()).toBe(0);
    expect(dash.stderr).toContain(`warning: ${dash.url} is plain HTTP: the token and the session cookie cross the network readable`);
    expect(dash.stderr).not.toContain(TOKEN);
  });

  it('without a token, answers only to a loopback Host (no DNS rebinding)', async () => {
    const { url } = await dashboard();
    const port = new URL(url).port;
    expect((await rawGet(`${url}/api/state`, { Host: `127.0.0.1:${port}` })).status).toBe(200);
    expect((await rawGet(`${url}/api/state`, { Host: `localhost:${port}` })).status).toBe(200);
    const evil = await rawGet(`${url}/api/state`, { Host: `attacker.example:${port}` });
    expect(evil.status).toBe(403);
    expect(evil.body).not.toContain('jobs');
  });
});

describe('mam dashboard: the token gate', () => {
  it('refuses data without the token, takes it as a bearer or through a login cookie, and never echoes it', async () => {
    const { ws, url } = await dashboard({ token: TOKEN });
    await register(ws, 'dddd0001', '--brief', 'gated');

    const bare = await fetch(`${url}/api/state`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toContain('Bearer');
    expect((await openStream(url)).res.status).toBe(401);
    expect((await fetch(`${url}/api/jobs/dddd0001`)).status).toBe(401);
    expect((await fetch(`${url}/api/state`, { headers: { Authorization: 'Bearer wrong-token-wrong-token' } })).status).toBe(401);

    // The page itself carries no data and no secret: it may load, to show the login form.
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).not.toContain(TOKEN);
    expect(await (await fetch(`${url}/api/session`)).json()).toEqual({ auth_required: true, authenticated: false, actions_enabled: false });

    const withBearer = await fetch(`${url}/api/state`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(withBearer.status).toBe(200);

    const wrong = await fetch(`${url}/api/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: 'nope' }) });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const login = await fetch(`${url}/api/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: TOKEN }) });
    expect(login.status).toBe(200);
    const cookie = login.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^mam_dashboard=[\w-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200$/);
    expect(cookie).not.toContain(TOKEN);
    const session = cookie.split(';')[0]!;

    const state = await fetch(`${url}/api/state`, { headers: { Cookie: session } });
    expect(state.status).toBe(200);
    const job = await fetch(`${url}/api/jobs/dddd0001`, { headers: { Cookie: session } });
    const texts = [await state.text(), await job.text()];
    for (const text of texts) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain('auth_token');
      expect(text).not.toContain(recordOf(ws, 'dddd0001').auth_token);
    }
    const stream = await openStream(url, { Cookie: session });
    expect(stream.res.status).toBe(200);
    expect(await waitUntil(() => stream.events.some((e) => e.event === 'snapshot'), 5_000)).toBe(true);

    const logout = await fetch(`${url}/api/logout`, { method: 'POST', headers: { Cookie: session, 'Content-Type': 'application/json' }, body: '{}' });
    expect(logout.status).toBe(200);
    expect((await fetch(`${url}/api/state`, { headers: { Cookie: session } })).status).toBe(401);
  });
});

describe('mam dashboard: live data', () => {
  it('streams a snapshot, then rows as verified events arrive; a forged event is only a rejection mark', async () => {
    const { ws, url } = await dashboard();
    const rec = await register(ws, 'dddd0002', '--brief', 'stream me');
    const stream = await openStream(url);
    const rowOf = (status: string) =>
      stream.events.some((e) => (e.event === 'update' ? e.data.rows : e.data.jobs).some((r: any) => r.job_id === 'dddd0002' && r.status === status));
    // The registry folder did not exist when the dashboard started: the job shows up at the next poll.
    expect(await waitUntil(() => rowOf('pending'), 10_000)).toBe(true);
    expect(await waitUntil(() => stream.events.some((e) => e.data.broker?.state === 'live'), 10_000)).toBe(true);

    await publishOk(ws, 'dddd0002', 'started', '--detail', 'first step');
    expect(await waitUntil(() => rowOf('running'), 10_000)).toBe(true);

    const client = await connectPlainClient(broker.url);
    onTestFinished(() => client.endAsync(true));
    await client.publishAsync(eventsTopicOf('dddd0002'), forgedEvent(rec, 2, 'completed', 'FORGED-COMPLETION'), { qos: 1 });
    const rejected = () =>
      stream.events.some((e) => e.event === 'update' && e.data.entries.some((x: any) => x.job_id === 'dddd0002' && x.entry.kind === 'rejected'));
    expect(await waitUntil(rejected, 10_000)).toBe(true);
    const all = JSON.stringify(stream.events);
    expect(all).not.toContain('FORGED-COMPLETION');
    expect(rowOf('completed')).toBe(false);

    const detail = (await (await fetch(`${url}/api/jobs/dddd0002`)).json()) as any;
    expect(detail.job.status).toBe('running');
    expect(detail.timeline.entries.map((e: any) => e.kind)).toContain('rejected');
    expect(JSON.stringify(detail)).not.toContain('FORGED-COMPLETION');
    expect(detail.cli.map((c: any) => c.line)).toEqual([
      'mam show --job dddd0002',
      'mam subscribe --job dddd0002 --pretty',
      'mam close --job dddd0002 --request cancelled',
      'mam redispatch --job dddd0002',
    ]);
  });

  it('404s an unknown job, 400s a bad id', async () => {
    const { url } = await dashboard();
    expect((await fetch(`${url}/api/jobs/ffffffff`)).status).toBe(404);
    expect((await fetch(`${url}/api/jobs/..%2F..%2Fetc`)).status).toBe(400);
    expect((await fetch(`${url}/nope`)).status).toBe(404);
  });
});

describe('mam dashboard: actions', () => {
  const json = (cookie: string, origin?: string) => ({
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Cookie: cookie, ...(origin ? { Origin: origin } : {}) },
    body: '{}',
  });

  async function loggedIn(url: string): Promise<string> {
    const login = await fetch(`${url}/api/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: TOKEN }) });
    return login.headers.get('set-cookie')!.split(';')[0]!;
  }

  it('are off without --allow-actions, even with the token', async () => {
    const { ws, url } = await dashboard({ token: TOKEN });
    await register(ws, 'dddd0003', '--brief', 'keep');
    const res = await fetch(`${url}/api/jobs/dddd0003/actions/cancel`, json(await loggedIn(url)));
    expect(res.status).toBe(403);
    expect(recordOf(ws, 'dddd0003').status).toBe('pending');
  });

  it('cancel and redispatch go through the core: the record changes as with the CLI; refusals are 409', async () => {
    const { ws, url, board } = await dashboard({ token: TOKEN, allowActions: true });
    await register(ws, 'dddd0004', '--brief', 'cancel me');
    const cookie = await loggedIn(url);

    expect((await fetch(`${url}/api/jobs/dddd0004/actions/cancel`, { ...json(cookie), headers: { Cookie: cookie } })).status).toBe(415);
    expect((await fetch(`${url}/api/jobs/dddd0004/actions/cancel`, json(cookie, 'http://evil.example'))).status).toBe(403);
    expect((await fetch(`${url}/api/jobs/dddd0004/actions/cancel`, json(''))).status).toBe(401);
    expect(recordOf(ws, 'dddd0004').status).toBe('pending');

    const cancel = await fetch(`${url}/api/jobs/dddd0004/actions/cancel`, json(cookie, url));
    expect(cancel.status).toBe(200);
    expect(await cancel.json()).toMatchObject({ ok: true, message: 'job dddd0004 cancelled' });
    expect(recordOf(ws, 'dddd0004')).toMatchObject({ status: 'cancelled', detail: 'cancelled' });
    expect(board.row('dddd0004')!.status).toBe('cancelled');

    const again = await fetch(`${url}/api/jobs/dddd0004/actions/cancel`, json(cookie, url));
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: string }).error).toBe('refused: job dddd0004: job is already cancelled');

    const redispatch = await fetch(`${url}/api/jobs/dddd0004/actions/redispatch`, json(cookie, url));
    expect(redispatch.status).toBe(200);
    expect(recordOf(ws, 'dddd0004')).toMatchObject({ status: 'pending', attempt_id: 2 });
    expect((await fetch(`${url}/api/jobs/dddd0004/actions/launch_missiles`, json(cookie, url))).status).toBe(404);
  });
  it('approve and deny answer a waiting permission request, as `mam approve` / `mam deny` do', async () => {
    const { ws, config, registry, url, board } = await dashboard({ token: TOKEN, allowActions: true });
    await register(ws, 'dddd0005', '--brief', 'ask before pushing');
    const cookie = await loggedIn(url);
    expect(await waitUntil(() => board.has('dddd0005'), 10_000)).toBe(true);
    expect(board.row('dddd0005')!.actions).not.toContain('approve');
    const offered = () => board.row('dddd0005')?.actions.includes('approve') === true;

    // The asking side as a hook runs it: publishes permission_required, waits on the control topic.
    const ask = () => askPermission(config, registry, { jobId: 'dddd0005', tool: 'Bash', input: { command: 'git push' }, timeoutMs: 20_000 });
    const first = ask();
    expect(await waitUntil(offered, 10_000)).toBe(true);
    expect(board.row('dddd0005')!.actions).toEqual(['approve', 'deny', 'cancel', 'redispatch']);
    const approve = await fetch(`${url}/api/jobs/dddd0005/actions/approve`, json(cookie, url));
    expect(approve.status).toBe(200);
    expect(await approve.json()).toMatchObject({ ok: true, message: 'job dddd0005: allow sent for the request at seq 1' });
    expect(await first).toEqual({ decision: 'allow', reason: 'approved by the operator', by: 'operator' });
    expect(auditOf(ws, 'dddd0005').find((l) => l.type === 'decision_sent')).toMatchObject({ source: 'dashboard', request_seq: 1, decision: 'allow' });

    // Answered: nothing waits any more, and a second approve is a conflict, not a second answer.
    const again = await fetch(`${url}/api/jobs/dddd0005/actions/approve`, json(cookie, url));
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: string }).error).toContain('no permission request of its current attempt is waiting here');

    const second = ask();
    expect(await waitUntil(() => board.row('dddd0005')?.last_seq === 2, 10_000)).toBe(true);
    const deny = await fetch(`${url}/api/jobs/dddd0005/actions/deny`, json(cookie, url));
    expect(deny.status).toBe(200);
    expect(await second).toEqual({ decision: 'deny', reason: 'denied by the operator', by: 'operator' });
    const detail = (await (await fetch(`${url}/api/jobs/dddd0005`, { headers: { Cookie: cookie } })).json()) as { cli: Array<{ line: string }> };
    expect(detail.cli.map((c) => c.line)).toContain('mam approve --job dddd0005');
  });
});
