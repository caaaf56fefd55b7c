import { spawnSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { type Workspace, runBinAsync } from '../helpers/cli.ts';
import { waitUntil } from '../helpers/wait.ts';
import { fleetWorkspace, publishEvent, runningJob, startMonitor } from './fleet-fixtures.ts';
import { startWebhookServer } from './webhook-server.ts';

/**
 * `--notify @FILE` (docs/coordination-reference.md, "Webhooks"): webhook URLs read from a file of
 * the user's own that no one else can read, so that they stay out of argv. A file open to others, a
 * missing one, an empty one or one with a bad line is refused (exit 64) before anything runs,
 * without repeating a URL.
 */

function targetsFile(ws: Workspace, text: string, mode: number): string {
  const file = path.join(ws.root, 'webhooks');
  writeFileSync(file, text);
  chmodSync(file, mode);
  return file;
}

describe('mam-subscribe --notify @FILE', () => {
  useBrokerCleanup();
  let broker: TestBroker;

  it('POSTs to each target listed in a 0600 file (comments and blank lines skipped), beside a URL given as is', { timeout: 30_000 }, async () => {
    broker ??= await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const [fromFile1, fromFile2, given] = await Promise.all([startWebhookServer(), startWebhookServer(), startWebhookServer()]);
    const file = targetsFile(ws, `# the team's channels\n\ndiscord:${fromFile1.url}\n  slack:${fromFile2.url}  \n`, 0o600);
    const mon = await startMonitor(ws, ['--notify', `@${file}`, '--notify', given.url]);

    await runningJob(ws, 'f11e0001', 'w-file');
    await publishEvent(ws, 'f11e0001', 'error', '--detail', 'crashed');
    await mon.waitForAlert({ alert: 'failed', job_id: 'f11e0001' });
    expect(await waitUntil(() => [fromFile1, fromFile2, given].every((h) => h.delivered.length === 1), 10_000)).toBe(true);
    expect(fromFile1.delivered[0]!.body).toEqual({ content: expect.stringContaining('f11e0001') });
    expect(fromFile2.delivered[0]!.body).toEqual({ text: expect.stringContaining('f11e0001') });
    for (const hook of [fromFile1, fromFile2]) {
      expect(mon.proc.stdout).not.toContain(hook.url);
      expect(mon.proc.stderr).not.toContain(hook.url);
    }
  });

  it('refuses a file open to others, a missing one, one with no target or a bad line, and a FIFO (exit 64, one line, no URL)', async () => {
    broker ??= await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const secret = 'https://hooks.slack.com/services/SECRETFILE';

    const open = targetsFile(ws, `${secret}\n`, 0o644);
    const readable = await runBinAsync('mam-subscribe', ['--all', '--notify', `@${open}`], ws);
    expect(readable.code).toBe(64);
    expect(readable.stderr).toBe(`ERROR: --notify @${open}: permissions are too open (mode 0644); chmod 600 it\n`);
    expect(readable.stdout).toBe('');

    const missing = await runBinAsync('mam-subscribe', ['--all', '--notify', `@${path.join(ws.root, 'nowhere')}`], ws);
    expect(missing.code).toBe(64);
    expect(missing.stderr).toMatch(/^ERROR: --notify @\S+nowhere: cannot read \(ENOENT\)\n$/);

    const empty = targetsFile(ws, '# nothing yet\n\n', 0o600);
    const none = await runBinAsync('mam-subscribe', ['--all', '--notify', `@${empty}`], ws);
    expect(none.code).toBe(64);
    expect(none.stderr).toBe(`ERROR: --notify @${empty}: no target in it\n`);

    // A line that is no URL is named by its line, and not repeated.
    const typo = targetsFile(ws, `# ours\n${secret}\nhooks.slack.com/services/SECRETTYPO\n`, 0o600);
    const bad = await runBinAsync('mam-subscribe', ['--all', '--notify', `@${typo}`], ws);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toBe(`ERROR: --notify @${typo}: line 3: not a URL\n`);

    // A FIFO would block a plain read until some writer came: refused at once.
    const fifo = path.join(ws.root, 'fifo');
    expect(spawnSync('mkfifo', ['-m', '600', fifo]).status).toBe(0);
    const piped = await runBinAsync('mam-subscribe', ['--all', '--notify', `@${fifo}`], ws, { timeoutMs: 10_000 });
    expect(piped.code).toBe(64);
    expect(piped.stderr).toBe(`ERROR: --notify @${fifo}: not a regular file\n`);
    for (const r of [readable, missing, none, bad]) expect(r.stderr).not.toContain('SECRET');
  });
});
