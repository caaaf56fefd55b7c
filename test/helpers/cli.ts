import { type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const binPath = (bin: string): string => path.join(REPO_ROOT, 'bin', `${bin}.js`);

export interface Workspace {
  root: string;
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

/**
 * A fresh workspace (a folder holding `.git`, so it is its own root) and an environment that
 * points every command at it and at nothing of the machine's: no .mam.env, no system broker.
 */
export function makeWorkspace(extraEnv: NodeJS.ProcessEnv = {}): Workspace {
  const root = mkdtempSync(path.join(os.tmpdir(), 'mam-ws-'));
  mkdirSync(path.join(root, '.git'));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: root, MAM_REAL_ROOT: root, MAM_LOG_LEVEL: 'warn', ...extraEnv };
  return { root, env, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a built bin the way a user's script would: argv in, stdout/stderr/exit code out. */
export function runBin(bin: string, args: string[], ws: Workspace, opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): RunResult {
  const r: SpawnSyncReturns<string> = spawnSync(process.execPath, [binPath(bin), ...args], {
    cwd: ws.root,
    env: { ...ws.env, ...opts.env },
    input: opts.input,
    encoding: 'utf8',
    timeout: opts.timeoutMs ?? 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The same, without blocking the test's event loop (needed when the test also runs a broker). */
export function runBinAsync(bin: string, args: string[], ws: Workspace, opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath(bin), ...args], { cwd: ws.root, env: { ...ws.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
