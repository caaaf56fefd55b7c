import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { brokerAvailability, startMosquitto, startNatsServer, stopAllBrokers, suiteMode, type ServerName } from '../helpers/brokers.ts';

const WATCHDOG = fileURLToPath(new URL('../fixtures/brokers/watchdog.sh', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('harness bookkeeping', () => {
  const have = brokerAvailability();
  const servers = (['mosquitto', 'nats-server'] as const).filter((s) => have[s]);

  it.runIf(servers.length > 0)('stopAllBrokers() leaves no server process and no temp folder', async () => {
    const started = await Promise.all(servers.map((s) => (s === 'mosquitto' ? startMosquitto() : startNatsServer())));
    const pids = started.map((b) => b.pid ?? 0);
    expect(pids.every((p) => p > 0 && alive(p))).toBe(true);
    await stopAllBrokers();
    expect(pids.filter(alive)).toEqual([]);
    expect(started.filter((b) => existsSync(b.dir))).toEqual([]);
    expect(started.map((b) => b.pid)).toEqual(started.map(() => undefined));
  });

  it('the watchdog kills the server when the test process dies without cleanup', async () => {
    // A parent that starts a "server" through the watchdog, prints its pid, then is SIGKILLed:
    // no exit handler of the parent runs, only the closed stdin pipe is left to notice.
    const parentSrc = `
      const { spawn } = require('node:child_process');
      const c = spawn('sh', [process.env.WATCHDOG, 'sleep', '300'], { stdio: ['pipe', 'pipe', 'ignore'] });
      c.stdout.once('data', (d) => process.stdout.write(String(d)));
      setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', parentSrc], { env: { ...process.env, WATCHDOG }, stdio: ['ignore', 'pipe', 'inherit'] });
    const serverPid = await new Promise<number>((r) => parent.stdout.once('data', (d: Buffer) => r(Number.parseInt(String(d), 10))));
    expect(alive(serverPid)).toBe(true);
    parent.kill('SIGKILL');
    await vi.waitFor(() => expect(alive(serverPid)).toBe(false), { timeout: 3_000 });
  });

  it('skips a suite whose server is missing, and fails it in CI', () => {
    const hideAll = { PATH: process.env.PATH, MAM_TEST_HIDE_SERVERS: 'mosquitto,nats-server' };
    for (const s of ['mosquitto', 'nats-server'] satisfies ServerName[]) {
      expect(suiteMode(s, hideAll)).toBe('skip');
      expect(suiteMode(s, { ...hideAll, CI: 'true' })).toBe('fail');
      expect(brokerAvailability(hideAll)[s]).toBeUndefined();
    }
  });
});
