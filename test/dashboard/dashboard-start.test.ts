import { mkdirSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../../src/core/config/config.ts';
import { startDashboard } from '../../src/core/dashboard/dashboard.ts';
import { MamError } from '../../src/core/errors.ts';
import { POLL_INTERVAL_MS } from '../../src/core/registry/record-poller.ts';
import { Registry } from '../../src/core/registry/registry.ts';
import { runBinAsync } from '../helpers/cli.ts';
import { sleep, waitUntil } from '../helpers/wait.ts';
import { brokerWorkspace, deadPort } from '../publisher/publish-fixtures.ts';

/** A port someone else holds: a plain TCP server bound first, closed when the test ends. */
async function takenPort(): Promise<number> {
  const blocker: Server = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  const address = blocker.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/**
 * A dashboard's warnings as lines, and its registry. A corrupt record is the probe: a poller that
 * still runs names it in the log (at once through the folder watch, else within POLL_INTERVAL_MS).
 */
async function workspace() {
  const ws = brokerWorkspace(await deadPort());
  const config = loadConfig(ws.env, ws.root);
  mkdirSync(config.registryDir, { recursive: true });
  const lines: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
  const start = (port: number) =>
    startDashboard({ config, registry: new Registry(config), log, host: '127.0.0.1', port, allowActions: false, pushIntervalMs: 50 });
  const corruptRecord = (jobId: string) => writeFileSync(join(config.registryDir, `${jobId}.json`), '{ not json');
  const named = () => lines.some((l) => l.includes('dashboard: corrupt record skipped'));
  return { ws, start, corruptRecord, named };
}

describe('startDashboard when listen() fails', () => {
  it('rejects naming the port, and stops what it had started: the registry is not polled after', async () => {
    const probe = await workspace();
    // The probe works: a running dashboard names a corrupt record.
    const running = await probe.start(0);
    probe.corruptRecord('eeee0001');
    expect(await waitUntil(probe.named, POLL_INTERVAL_MS * 3)).toBe(true);
    await running.close();

    const failed = await workspace();
    const port = await takenPort();
    const err = await failed.start(port).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MamError);
    expect((err as Error).message).toBe(`port ${port} on 127.0.0.1 is already in use (another mam dashboard? --port 0 picks a free one)`);
    failed.corruptRecord('eeee0002');
    // Two poll periods and the folder watch's debounce: a leaked poller would have named it by now.
    await sleep(POLL_INTERVAL_MS * 2 + 500);
    expect(failed.named()).toBe(false);
  });

  it('mam dashboard on a port in use: one line, exit 1, at once', async () => {
    const { ws } = await workspace();
    const port = await takenPort();
    const started = Date.now();
    const r = await runBinAsync('mam', ['dashboard', '--port', String(port)], ws, { timeoutMs: 10_000 });
    expect(r.stderr).toBe(`ERROR: port ${port} on 127.0.0.1 is already in use (another mam dashboard? --port 0 picks a free one)\n`);
    expect(r.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
