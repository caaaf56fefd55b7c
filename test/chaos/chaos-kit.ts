import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { binPath, type Workspace } from '../helpers/cli.ts';

/**
 * The fault-injection suite's common ground: one seed per run (every file of a run derives its own
 * stream from it, so `MAM_CHAOS_SEED=N` replays them all), the size of a run (`MAM_CHAOS_LONG=1`
 * for the big one), processes that can be SIGKILLed and whose output is kept for the secret scan,
 * and the report lines that docs/reliability.md is built from.
 */

export const LONG = /^(1|true|yes)$/i.test(process.env.MAM_CHAOS_LONG ?? '');

/** `default` in a normal run, `long` with MAM_CHAOS_LONG=1. */
export const scale = (normal: number, long: number): number => (LONG ? long : normal);

/**
 * The run's seed. Without MAM_CHAOS_SEED it comes from the vitest parent process (its pid and
 * start time), so every test file of one run — each in its own worker — draws from the same seed,
 * and the one printed line replays the whole run.
 */
export const SEED: number = (() => {
  const given = process.env.MAM_CHAOS_SEED;
  if (given !== undefined && /^\d+$/.test(given.trim())) return Number(given.trim()) >>> 0;
  let start = String(Date.now());
  try {
    const stat = readFileSync(`/proc/${process.ppid}/stat`, 'utf8');
    start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? start;
  } catch {
    // No procfs: a seed per file, still printed and still replayable.
  }
  return hash32(`${process.ppid}:${start}`) % 2 ** 31;
})();

function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** A seeded stream of numbers (mulberry32), with the helpers the suites draw faults with. */
export interface Rng {
  readonly seed: number;
  next(): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** `n` draws from `items` in rounds: every round holds each item once, in a shuffled order. */
  deck<T>(items: readonly T[], n: number): T[];
}

/** The stream of one suite: the run's seed mixed with the suite's name, announced once. */
export function chaosRng(suite: string): Rng {
  const seed = (SEED ^ hash32(suite)) >>> 0;
  console.log(`[chaos] ${suite}: run seed ${SEED} (replay: MAM_CHAOS_SEED=${SEED}${LONG ? ' MAM_CHAOS_LONG=1' : ''})`);
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
    deck: (items, n) => {
      const out: (typeof items)[number][] = [];
      while (out.length < n) {
        const round = [...items];
        for (let i = round.length - 1; i > 0; i--) {
          const j = Math.floor(next() * (i + 1));
          [round[i], round[j]] = [round[j]!, round[i]!];
        }
        out.push(...round);
      }
      return out.slice(0, n);
    },
  };
}

// ---- report ---------------------------------------------------------------------------------

export interface ReportRow {
  fault: string;
  injected: number;
  checked: string;
  result: string;
  [extra: string]: unknown;
}

/**
 * One row of the reliability table: printed (`[chaos-report] {...}`), and appended to the file
 * MAM_CHAOS_REPORT names, when set, so that a run's table can be written from what really happened.
 */
export function report(row: ReportRow): void {
  const line = JSON.stringify({ seed: SEED, long: LONG, ...row });
  console.log(`[chaos-report] ${line}`);
  const file = process.env.MAM_CHAOS_REPORT;
  if (file) appendFileSync(file, `${line}\n`);
}

// ---- processes ------------------------------------------------------------------------------

export interface ProcResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface Proc {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly running: boolean;
  readonly done: Promise<ProcResult>;
  /** SIGKILL, once; false when it had already ended or been killed. */
  kill(signal?: NodeJS.Signals): boolean;
  /** Resolves when `re` matches stderr; rejects if the process ends first or after `ms`. */
  waitStderr(re: RegExp, ms?: number): Promise<void>;
}

/**
 * Everything the suite's processes ever wrote, stdout and stderr alike: the secret scan reads it.
 * Kept per worker (one test file), which is the scope of the scan.
 */
export const transcript: string[] = [];
const live = new Set<Proc>();

// A worker that ends (or fails) leaves no bin behind.
process.once('exit', () => {
  for (const p of live) p.kill();
});

/** Kills every process of this file still running; for afterEach/afterAll. */
export async function killAll(): Promise<void> {
  const procs = [...live];
  for (const p of procs) p.kill();
  await Promise.all(procs.map((p) => p.done));
}

/** A built bin (`mam-publish`, …) as its own process in `ws`, its output captured. */
export function spawnBin(bin: string, args: string[], ws: Workspace, env: NodeJS.ProcessEnv = {}): Proc {
  return spawnProc(process.execPath, [binPath(bin), ...args], { cwd: ws.root, env: { ...ws.env, ...env } });
}

export function spawnProc(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Proc {
  const started = Date.now();
  const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let running = true;
  let killed = false;
  const listeners = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const l of listeners) l();
  });
  const done = new Promise<ProcResult>((resolve) => {
    child.on('error', (err) => {
      stderr += `spawn error: ${err.message}\n`;
    });
    child.on('close', (code, signal) => {
      running = false;
      live.delete(proc);
      transcript.push(stdout, stderr);
      for (const l of listeners) l();
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
  const proc: Proc = {
    child,
    pid: child.pid ?? -1,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    get running() {
      return running;
    },
    done,
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (!running || (killed && signal === 'SIGKILL')) return false;
      if (signal === 'SIGKILL') killed = true;
      return child.kill(signal);
    },
    waitStderr(re, ms = 15_000) {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`no ${re} on stderr within ${ms} ms; stderr: ${stderr}`)), ms);
        const check = () => {
          if (re.test(stderr)) finish();
          else if (!running) finish(new Error(`process ended before ${re}; stderr: ${stderr}; stdout: ${stdout}`));
        };
        const finish = (err?: Error) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (err) reject(err);
          else resolve();
        };
        listeners.add(check);
        check();
      });
    },
  };
  live.add(proc);
  return proc;
}

/** Runs a bin to its end (killed after `timeoutMs`). */
export async function runBin(bin: string, args: string[], ws: Workspace, env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): Promise<ProcResult> {
  const p = spawnBin(bin, args, ws, env);
  const timer = setTimeout(() => p.kill(), timeoutMs);
  try {
    return await p.done;
  } finally {
    clearTimeout(timer);
  }
}

/** A stand-in agent: a process the heartbeat watches, which the test ends when it likes. */
export function spawnAgent(ws: Workspace): Proc {
  return spawnProc('sleep', ['600'], { cwd: ws.root, env: ws.env });
}

// ---- small things ---------------------------------------------------------------------------

export { sleep, waitUntil } from '../helpers/wait.ts';

/** Resident and peak memory of a process in KiB, from /proc (Linux). */
export function memoryKiB(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/** stdout split into parsed JSON lines; a line that is not JSON fails loudly. */
export function jsonLines(stdout: string): Array<Record<string, any>> {
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, any>;
      } catch {
        throw new Error(`stdout line is not JSON: ${JSON.stringify(l.slice(0, 200))}`);
      }
    });
}

export function stderrBesidesSubscribed(stderr: string): string {
  return stderr
    .split('\n')
    .filter((l) => l !== '' && !/^SUBSCRIBED\b/.test(l))
    .join('\n');
}
