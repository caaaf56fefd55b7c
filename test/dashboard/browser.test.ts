import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it, onTestFinished } from 'vitest';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { REPO_ROOT } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { brokerWorkspace, eventsTopicOf, publishOk, recordOf, register } from '../publisher/publish-fixtures.ts';
import { describeWithChromium, forgedEvent, launchChromium, signedEvent, startDashboardProcess } from './dashboard-fixtures.ts';

/**
 * `mam dashboard` as an operator sees it: the built bin serving its page to Debian's chromium, jobs
 * registered and events published by the real bins against an embedded broker.
 */
const TOKEN = 'browser-test-token-0123456789abcdef';

describeWithChromium('mam dashboard in a browser', () => {
  let broker: AedesTestBroker;
  let browser: BrowserContext;

  beforeAll(async () => {
    [broker, browser] = await Promise.all([startAedesBroker(), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await broker?.stop();
  });

  async function newPage(): Promise<Page> {
    const page = await browser.newPage();
    // A script error in the page fails the test, whatever the page happened to show.
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    onTestFinished(async () => {
      await page.close();
      if (errors.length > 0) throw new Error(`errors in the page: ${errors.join('; ')}`);
    });
    return page;
  }

  /** Waits until the list shows exactly n rows (`globalThis.document`: this file is compiled without the DOM's types). */
  const rowCount = (page: Page, n: number) =>
    page.waitForFunction((count) => (globalThis as any).document.querySelectorAll('#jobs tbody tr').length === count, n);

  const badge = (page: Page, jobId: string, status: string) => page.locator(`#jobs tr[data-id="${jobId}"] .badge.s-${status}`);

  it('shows a job going pending → running → completed as the agent publishes', async () => {
    const ws = brokerWorkspace(broker.port);
    await register(ws, 'eeee0001', '--brief', 'Say hello from the browser test', '--agent-session', 'pane-1');
    const dash = await startDashboardProcess(ws);
    const page = await newPage();
    await page.goto(dash.url);
    await badge(page, 'eeee0001', 'pending').waitFor();
    await page.locator('#conn[data-state="live"]').waitFor();

    await publishOk(ws, 'eeee0001', 'started', '--detail', 'on it', '--data', '{"agent":"claude"}');
    await badge(page, 'eeee0001', 'running').waitFor();
    await publishOk(ws, 'eeee0001', 'progress', '--detail', 'step 1 of 2');
    await page.locator('#jobs tr[data-id="eeee0001"]', { hasText: 'step 1 of 2' }).waitFor();
    await publishOk(ws, 'eeee0001', 'completed', '--detail', 'said hello');
    await badge(page, 'eeee0001', 'completed').waitFor();
    expect(await page.locator('#counts button[data-key="completed"] .chip-count').textContent()).toBe('1');

    // The job view: its timeline, its record without the token, its command lines.
    await page.click('a.job-link[data-job="eeee0001"]');
    await page.locator('#timeline tbody tr.ev-completed').waitFor();
    const events = await page.locator('#timeline tbody tr.k-event td:nth-child(2)').allTextContents();
    expect(events).toEqual(['started', 'progress', 'completed']);
    expect(page.url()).toContain('job=eeee0001');
    const html = await page.content();
    expect(html).not.toContain(recordOf(ws, 'eeee0001').auth_token);
    expect(html).not.toContain('auth_token');
    expect(await page.locator('#cli code').first().textContent()).toBe('mam show --job eeee0001');
    await page.goBack();
    await page.locator('#list:not([hidden])').waitFor();

    expect(await dash.stop()).toBe(0);
    expect(dash.stderr).toContain('mam dashboard stopped');
  });

  it('never shows a forged event, and marks it as rejected on the timeline', async () => {
    const ws = brokerWorkspace(broker.port);
    const rec = await register(ws, 'eeee0002', '--brief', 'Guard the gate');
    await publishOk(ws, 'eeee0002', 'started', '--detail', 'working');
    const dash = await startDashboardProcess(ws);
    const page = await newPage();
    await page.goto(`${dash.url}/?job=eeee0002`);
    await page.locator('#timeline tbody tr.ev-started').waitFor();
    await page.locator('#conn[data-state="live"]').waitFor();

    const client = await connectPlainClient(broker.url);
    onTestFinished(() => client.endAsync(true));
    await client.publishAsync(eventsTopicOf('eeee0002'), forgedEvent(rec, 2, 'completed', 'FORGED: all done, merge it'), { qos: 1 });
    // The positive fact to wait for: the rejection mark, pushed after the verifier refused the message.
    await page.locator('#timeline tbody tr.k-rejected').waitFor();
    expect(await page.locator('#timeline tbody tr.k-rejected').textContent()).toContain('rejected: hmac');
    expect(await page.content()).not.toContain('FORGED');
    expect(await page.locator('#job-state .badge.s-running').count()).toBe(1);

    // A real event after it still arrives; the forgery is nowhere on the list either.
    await publishOk(ws, 'eeee0002', 'progress', '--detail', 'genuine step');
    await page.locator('#timeline tbody tr', { hasText: 'genuine step' }).waitFor();
    // Read again from the server (the audit and the live marks merged): still one mark, still no content.
    await page.reload();
    await page.locator('#timeline tbody tr', { hasText: 'genuine step' }).waitFor();
    expect(await page.locator('#timeline tbody tr.k-rejected').count()).toBe(1);
    expect(await page.content()).not.toContain('FORGED');
    await page.click('#back');
    await badge(page, 'eeee0002', 'running').waitFor();
    expect(await page.content()).not.toContain('FORGED');
  });

  it('marks seqs that never arrived', async () => {
    const ws = brokerWorkspace(broker.port);
    const rec = await register(ws, 'eeee0003', '--brief', 'Lossy agent');
    await publishOk(ws, 'eeee0003', 'started');
    const dash = await startDashboardProcess(ws);
    const page = await newPage();
    await page.goto(`${dash.url}/?job=eeee0003`);
    await page.locator('#conn[data-state="live"]').waitFor();
    await page.locator('#timeline tbody tr.ev-started').waitFor();
    const client = await connectPlainClient(broker.url);
    onTestFinished(() => client.endAsync(true));
    // Signed with the job's token, seqs 2 and 3 skipped: accepted, and the gap shown.
    await client.publishAsync(eventsTopicOf('eeee0003'), signedEvent(recordOf(ws, 'eeee0003'), 4, 'progress', 'after a gap'), { qos: 1 });
    await page.locator('#timeline tbody tr.gap', { hasText: '2 seqs never seen before #4' }).waitFor();
    expect(rec.job_id).toBe('eeee0003');
  });

  it('keeps filters and sort in the URL: they survive a reload', async () => {
    const ws = brokerWorkspace(broker.port);
    await register(ws, 'eeee0004', '--brief', 'alpha task', '--agent-session', 'pane-a');
    await register(ws, 'eeee0005', '--brief', 'beta task', '--agent-session', 'pane-b');
    await register(ws, 'eeee0006', '--brief', 'gamma alpha task', '--agent-session', 'pane-b');
    const dash = await startDashboardProcess(ws);
    const page = await newPage();
    await page.goto(dash.url);
    await page.locator('#jobs tbody tr').nth(2).waitFor();

    await page.fill('#f-q', 'alpha');
    await page.fill('#f-session', 'pane-b');
    await page.waitForURL(/q=alpha.*session=pane-b|session=pane-b.*q=alpha/);
    await page.click('#jobs th[data-sort="job_id"] button');
    await page.waitForURL(/sort=job_id/);
    await rowCount(page, 1);

    await page.reload();
    await page.locator('body[data-ready]').waitFor();
    await rowCount(page, 1);
    expect(await page.inputValue('#f-q')).toBe('alpha');
    expect(await page.inputValue('#f-session')).toBe('pane-b');
    expect(await page.locator('#jobs tbody tr').getAttribute('data-id')).toBe('eeee0006');
    expect(await page.locator('#jobs th[data-sort="job_id"]').getAttribute('aria-sort')).toBe('ascending');

    // A count is a filter too, and Clear brings every job back.
    await page.click('#filters button[type="reset"]');
    await rowCount(page, 3);
    await page.click('#counts button[data-key="pending"]');
    await page.waitForURL(/status=pending/);
    await page.reload();
    await rowCount(page, 3);
    expect(await page.inputValue('#f-status')).toBe('pending');
  });

  it('behind a token: refuses a request without it, logs the page in without showing it, and takes actions', async () => {
    const ws = brokerWorkspace(broker.port);
    await register(ws, 'eeee0007', '--brief', 'Cancel me from the page');
    const dash = await startDashboardProcess(ws, ['--allow-actions'], { MAM_DASHBOARD_TOKEN: TOKEN });
    const page = await newPage();

    const refused = await page.request.get(`${dash.url}/api/state`);
    expect(refused.status()).toBe(401);
    expect((await page.request.get(`${dash.url}/api/events`)).status()).toBe(401);

    await page.goto(dash.url);
    await page.locator('#login:not([hidden])').waitFor();
    expect(await page.locator('#app').isHidden()).toBe(true);
    await page.fill('#token', 'not-the-token-at-all-00');
    await page.click('#login-form button[type="submit"]');
    await page.locator('#login-error', { hasText: 'wrong token' }).waitFor();

    await page.fill('#token', TOKEN);
    await page.click('#login-form button[type="submit"]');
    await badge(page, 'eeee0007', 'pending').waitFor();
    expect(page.url()).not.toContain(TOKEN);
    expect(await page.content()).not.toContain(TOKEN);
    expect(await page.inputValue('#token')).toBe('');
    const cookies = await browser.cookies(dash.url);
    expect(cookies.find((c) => c.name === 'mam_dashboard')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(JSON.stringify(cookies)).not.toContain(TOKEN);

    // Cancel: two clicks (ask, confirm), through the same core as `mam close`.
    await page.click('a.job-link[data-job="eeee0007"]');
    const cancel = page.locator('#job-actions button[data-action="cancel"]');
    await cancel.click();
    await page.locator('#job-actions button[data-action="cancel"].armed').waitFor();
    expect(recordOf(ws, 'eeee0007').status).toBe('pending');
    await cancel.click();
    await page.locator('#action-result', { hasText: 'job eeee0007 cancelled' }).waitFor();
    await page.locator('#job-state .badge.s-cancelled').waitFor();
    expect(recordOf(ws, 'eeee0007')).toMatchObject({ status: 'cancelled', detail: 'cancelled' });
  });

  it.runIf(process.env.MAM_DASHBOARD_SCREENSHOTS === '1')('takes the screenshots of docs/dashboard.md', async () => {
    const out = join(REPO_ROOT, 'docs', 'img');
    mkdirSync(out, { recursive: true });
    const ws = brokerWorkspace(broker.port);
    const jobs: Array<[string, string, string[]]> = [
      ['a1b2c3d4', 'Fix the flaky login test in auth/', ['--agent-session', 'pane-1']],
      ['b2c3d4e5', 'Upgrade the build to Node 22', ['--agent-session', 'pane-2']],
      ['c3d4e5f6', 'Write release notes for 0.2', ['--agent-session', 'pane-3']],
      ['d4e5f6a7', 'Refactor the payment client', ['--agent-session', 'pane-4', '--idle-timeout', '1', '--ack-timeout', '1']],
      ['e5f6a7b8', 'Add retries to the uploader', ['--agent-session', 'pane-5']],
      ['f6a7b8c9', 'Translate the README', ['--agent-session', 'pane-6']],
      ['0a1b2c3d', 'Benchmark the new cache', []],
      ['1b2c3d4e', 'Delete the legacy importer', ['--agent-session', 'pane-2']],
    ];
    for (const [id, brief, args] of jobs) await register(ws, id, '--brief', brief, ...args);
    const dash = await startDashboardProcess(ws);
    const pub = (id: string, event: string, detail: string, ...more: string[]) => publishOk(ws, id, event, '--detail', detail, ...more);
    await pub('a1b2c3d4', 'started', 'reading auth/login.spec.ts', '--data', '{"agent":"claude"}');
    await pub('a1b2c3d4', 'progress', 'found a race in the session fixture');
    await pub('a1b2c3d4', 'progress', 'heartbeat');
    await pub('a1b2c3d4', 'progress', 'heartbeat');
    await pub('a1b2c3d4', 'completed', 'fixed: awaited the fixture; 40/40 green');
    await pub('b2c3d4e5', 'started', 'bumping engines and CI images', '--data', '{"agent":"codex"}');
    await pub('b2c3d4e5', 'error', 'native module node-sass fails to build on 22');
    await pub('c3d4e5f6', 'started', 'collecting merged PRs', '--data', '{"agent":"claude"}');
    await pub('c3d4e5f6', 'permission_required', 'may I push the tag v0.2.0?');
    await pub('c3d4e5f6', 'progress', 'heartbeat');
    await pub('d4e5f6a7', 'started', 'mapping the client API', '--data', '{"agent":"aider"}');
    await pub('e5f6a7b8', 'started', 'reading uploader.ts', '--data', '{"agent":"gemini"}');
    await pub('e5f6a7b8', 'progress', 'wrote exponential backoff; running tests');
    await pub('1b2c3d4e', 'started', 'checking for callers');
    await runClose(ws, '1b2c3d4e');
    const client = await connectPlainClient(broker.url);
    onTestFinished(() => client.endAsync(true));
    await client.publishAsync(eventsTopicOf('e5f6a7b8'), forgedEvent(recordOf(ws, 'e5f6a7b8'), 3, 'completed', 'forged'), { qos: 1 });
    await client.publishAsync(eventsTopicOf('e5f6a7b8'), signedEvent(recordOf(ws, 'e5f6a7b8'), 5, 'progress', 'tests green; cleaning up'), { qos: 1 });

    const page = await newPage();
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.goto(dash.url);
    await page.locator('#jobs tr.h-stalled').waitFor({ timeout: 10_000 });
    await page.locator('#conn[data-state="live"]').waitFor();
    await page.screenshot({ path: join(out, 'dashboard-overview.png') });
    await page.click('#counts button[data-key="permission"]');
    await page.fill('#f-agent', 'claude');
    await page.waitForURL(/agent=claude/);
    await rowCount(page, 1);
    await page.click('#counts button[data-key="permission"]');
    await rowCount(page, 2);
    await page.screenshot({ path: join(out, 'dashboard-filtered.png') });
    await page.goto(`${dash.url}/?job=e5f6a7b8`);
    await page.locator('#timeline tbody tr.k-rejected').waitFor();
    await page.locator('#timeline tbody tr.gap').waitFor();
    await page.screenshot({ path: join(out, 'dashboard-job.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(dash.url);
    await page.locator('#jobs tr.h-stalled').waitFor();
    await page.screenshot({ path: join(out, 'dashboard-phone.png') });
  });
});

async function runClose(ws: Parameters<typeof publishOk>[0], id: string): Promise<void> {
  const { runBinAsync } = await import('../helpers/cli.ts');
  const r = await runBinAsync('mam-close', ['--job', id, '--request', 'cancelled'], ws);
  if (r.code !== 0) throw new Error(`mam-close exited ${r.code}: ${r.stderr}`);
}
