import { closeSync, existsSync, openSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { type Workspace, binPath, makeWorkspace, runBin } from '../helpers/cli.ts';

// The bins as processes: what only a process shows (its launcher, argv from the shell, stdin as a
// file descriptor, the exit status, a stack with MAM_DEBUG). What the commands do is held in
// process by test/cli/lifecycle.test.ts and the suites of each capability.

let ws: Workspace;
beforeEach(() => {
  ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: '1' });
});
afterEach(() => ws.cleanup());

const B = 'bbbbbbbb';

function failed(r: { code: number | null; stdout: string; stderr: string }, code: number): string {
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/^ERROR: [^\n]+\n$/);
  expect(r.code).toBe(code);
  return r.stderr;
}

describe('every bin', () => {
  const bins = ['mam', 'mam-register', 'mam-pick', 'mam-publish', 'mam-subscribe', 'mam-close', 'mam-remote'];

  it.each(bins)('%s --help and --version exit 0', (bin) => {
    const help = runBin(bin, ['--help'], ws);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: /);
    expect(runBin(bin, ['--version'], ws)).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
  });

  it('mam with an unknown verb is a usage error', () => {
    expect(failed(runBin('mam', ['frobnicate'], ws), 64)).toMatch(/unknown command/);
  });

  it('MAM_DEBUG=1 adds the stack trace', () => {
    const r = runBin('mam', ['show', '--job', B], ws, { env: { MAM_DEBUG: '1' } });
    expect(r.code).toBe(66);
    expect(r.stderr).toMatch(/^ERROR: no such job: bbbbbbbb\n[\s\S]*\n\s+at /);
  });
});

describe('stdin as a file descriptor', () => {
  it('--brief-file - < /dev/zero is read up to the bound, then refused, writing nothing', () => {
    const zero = openSync('/dev/zero', 'r');
    const r = spawnSync(process.execPath, [binPath('mam-register'), '--brief-file', '-'], {
      cwd: ws.root,
      env: ws.env,
      stdio: [zero, 'pipe', 'pipe'],
      encoding: 'utf8',
      timeout: 10_000,
    });
    closeSync(zero);
    expect(failed({ code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr }, 64)).toContain('larger than 1048576 bytes');
    const jobs = path.join(ws.root, '.mam', 'jobs');
    expect(existsSync(jobs) ? readdirSync(jobs).filter((f) => f.endsWith('.json')) : []).toEqual([]);
  });

  it('a pipe on stdin is the brief', () => {
    const r = runBin('mam-register', ['--brief-file', '-'], ws, { input: 'from a pipe\n' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ brief: 'from a pipe\n', status: 'pending' });
  });
});
