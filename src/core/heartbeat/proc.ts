import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { monotonicMs } from '../monotonic.ts';

/** What the heartbeat needs to know about one process, read from Linux's /proc. */
export interface ProcInfo {
  pid: number;
  ppid: number;
  /** The kernel's name for it (at most 15 characters: the file that was exec'd, or a title it set). */
  comm: string;
  /** `R`, `S`, … ; `Z` is a zombie: dead, waiting for a parent that may never reap it. */
  state: string;
  argv: string[];
}

/** Reads /proc/<pid>; undefined when the process is gone or there is no procfs (macOS). */
export function readProc(pid: number): ProcInfo | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // `pid (comm) state ppid …`: comm may itself hold spaces and parentheses, so cut at the last `)`.
  const open = stat.indexOf('(');
  const close = stat.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const [state = '?', ppid = '0'] = stat.slice(close + 2).split(' ');
  let argv: string[] = [];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((a) => a !== '');
  } catch {
    // A process can exit between the two reads; its stat is still worth having.
  }
  return { pid, ppid: Number(ppid), comm: stat.slice(open + 1, close), state, argv };
}

/**
 * Alive for the heartbeat's purposes. `kill(pid, 0)` alone is not enough: a detached timer is
 * reparented to init, and an init that does not reap (a container's) keeps it a zombie forever,
 * which `kill(pid, 0)` still finds.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists, owned by someone else.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const state = readProc(pid)?.state;
  return state !== 'Z' && state !== 'X';
}

/** Polls until `pid` is gone; true if it went within `timeoutMs` (monotonic: a clock step neither cuts nor stretches the drain). */
export async function waitForExit(pid: number, timeoutMs: number, pollMs = 10): Promise<boolean> {
  const deadline = monotonicMs() + timeoutMs;
  for (;;) {
    if (!isAlive(pid)) return true;
    if (monotonicMs() >= deadline) return false;
    await sleep(pollMs);
  }
}

/**
 * Whether `pid` is the heartbeat timer of `jobId`, so that a stale pidfile whose pid the kernel has
 * since given to another process never gets that process signalled. Without /proc we cannot tell,
 * and trust the pidfile as the Python toolkit did.
 */
export function isHeartbeatTimer(pid: number, jobId: string): boolean {
  const info = readProc(pid);
  if (info === undefined) return !hasProcfs() && isAlive(pid);
  return info.argv.some((a) => a.endsWith('mam-heartbeat.cjs')) && info.argv.includes(jobId);
}

function hasProcfs(): boolean {
  return readProc(process.pid) !== undefined;
}
