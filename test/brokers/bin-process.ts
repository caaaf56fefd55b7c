import { spawn } from 'node:child_process';
import { onTestFinished } from 'vitest';
import { binPath, type RunResult, type Workspace } from '../helpers/cli.ts';

/** A built bin that runs while the test acts on it (a subscriber, `mam broker`). */
export interface BinProcess {
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves with the match once stderr shows `pattern`; rejects if the process ends first. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  kill(signal?: NodeJS.Signals): void;
  result: Promise<RunResult>;
}

/** Spawns `bin` like runBinAsync does; it is SIGKILLed when the test ends, pass or fail. */
export function spawnBin(bin: string, args: string[], ws: Workspace, opts: { env?: NodeJS.ProcessEnv } = {}): BinProcess {
  const child = spawn(process.execPath, [binPath(bin), ...args], { cwd: ws.root, env: { ...ws.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const l of listeners) l();
  });
  const result = new Promise<RunResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      for (const l of listeners) l();
      resolve({ code, stdout, stderr });
    });
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return {
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    waitForStderr(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`no ${pattern} on ${bin}'s stderr within ${timeoutMs} ms:\n${stderr}`)), timeoutMs);
        const check = () => {
          const m = stderr.match(pattern);
          if (m) done(undefined, m);
          else if (child.exitCode !== null || child.signalCode !== null)
            done(new Error(`${bin} exited (${child.exitCode ?? child.signalCode}) before ${pattern}:\n${stderr}`));
        };
        const done = (err: Error | undefined, m?: RegExpMatchArray) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (err) reject(err);
          else resolve(m!);
        };
        listeners.add(check);
        check();
      });
    },
    kill(signal = 'SIGTERM') {
      child.kill(signal);
    },
    result,
  };
}

/** Failure as a script sees it: the exit code, exactly one `ERROR:` line on stderr, no stack. */
export function expectOneErrorLine(r: RunResult, code: number): string {
  if (r.code !== code || !/^ERROR: [^\n]+\n$/.test(r.stderr)) {
    throw new Error(`expected exit ${code} and one ERROR line, got exit ${r.code}:\n${r.stderr}`);
  }
  return r.stderr;
}
