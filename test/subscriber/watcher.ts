import { type ChildProcess, spawn } from 'node:child_process';
import { onTestFinished } from 'vitest';
import { type Workspace, binPath } from '../helpers/cli.ts';

/**
 * A `mam-subscribe` running in the background, as a wrapper script would run it: the test reads
 * its stdout and stderr as they come, waits for `SUBSCRIBED` before an agent publishes, and awaits
 * the exit code. A watcher still alive when its test ends is killed.
 */
export interface Watcher {
  readonly child: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout split into lines (without the empty tail). */
  lines(): string[];
  /** stdout lines parsed as JSON. */
  events(): Record<string, any>[];
  /** Resolves once `SUBSCRIBED` is on stderr; rejects if the process exits first or after `timeoutMs`. */
  subscribed(timeoutMs?: number): Promise<void>;
  /** Resolves with the exit, and how long the process ran. */
  readonly exited: Promise<WatcherExit>;
  /** Rejects unless the process exits within `timeoutMs`. */
  exit(timeoutMs?: number): Promise<WatcherExit>;
  /** True while the process runs. */
  readonly running: boolean;
}

export interface WatcherExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
  stdout: string;
  stderr: string;
}

export function startWatcher(ws: Workspace, args: string[], opts: { env?: NodeJS.ProcessEnv; shell?: (cmd: string) => string } = {}): Watcher {
  const startedAt = Date.now();
  const argv = [binPath('mam-subscribe'), ...args];
  const env = { ...ws.env, ...opts.env };
  // `shell` wraps the command line, e.g. to pipe it into `head -1` as a user's script would.
  const child = opts.shell
    ? spawn('sh', ['-c', opts.shell([process.execPath, ...argv].map(shellQuote).join(' '))], { cwd: ws.root, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, argv, { cwd: ws.root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let running = true;
  const stderrListeners = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const l of stderrListeners) l();
  });
  const exited = new Promise<WatcherExit>((resolve) => {
    child.on('close', (code, signal) => {
      running = false;
      for (const l of stderrListeners) l();
      resolve({ code, signal, ms: Date.now() - startedAt, stdout, stderr });
    });
  });
  onTestFinished(async () => {
    if (running) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const w: Watcher = {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    get running() {
      return running;
    },
    lines: () => stdout.split('\n').filter((l, i, all) => i < all.length - 1 || l !== ''),
    events: () => w.lines().map((l) => JSON.parse(l) as Record<string, any>),
    exited,
    subscribed(timeoutMs = 10_000) {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`no SUBSCRIBED within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
        const check = () => {
          if (/^SUBSCRIBED\b/m.test(stderr)) done();
          else if (!running) done(new Error(`mam-subscribe exited before SUBSCRIBED; stderr: ${stderr}; stdout: ${stdout}`));
        };
        const done = (err?: Error) => {
          clearTimeout(timer);
          stderrListeners.delete(check);
          if (err) reject(err);
          else resolve();
        };
        stderrListeners.add(check);
        check();
      });
    },
    exit(timeoutMs = 15_000) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`mam-subscribe still running after ${timeoutMs} ms; stdout: ${stdout}; stderr: ${stderr}`)), timeoutMs);
      });
      return Promise.race([exited, late]).finally(() => clearTimeout(timer));
    },
  };
  return w;
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** stderr without the SUBSCRIBED line: what a script would see as warnings or errors. */
export function stderrBesidesSubscribed(stderr: string): string {
  return stderr
    .split('\n')
    .filter((l) => l !== '' && !/^SUBSCRIBED\b/.test(l))
    .join('\n');
}
