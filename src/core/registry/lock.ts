import { mkdirSync, rmdirSync, statSync } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { LockLost, LockTimeout } from '../errors.ts';
import { monotonicMs } from '../monotonic.ts';

/**
 * A lock is stale when a waiter has watched its mtime stay put for this long. The holder refreshes
 * the mtime every REFRESH_MS, so only a dead holder (SIGKILL, power loss) leaves one unchanged: the
 * next command takes it over within about five seconds.
 *
 * Staleness is judged on the waiter's monotonic clock, never by comparing its wall clock with the
 * mtime: a waiter whose clock jumped a day ahead (an NTP step, a resumed laptop, `date -s`) would
 * otherwise see every live lock as a day old and break it under its holder.
 */
const STALE_MS = 5_000;
const REFRESH_MS = 1_000;
/**
 * A lock that is old by the wall clock as well is taken over once it has been watched through a
 * refresh it missed: a lock left behind an hour ago is not waited on for five more seconds, and a
 * live holder, refreshing every REFRESH_MS, is never judged on its wall-clock age alone.
 */
const QUICK_WATCH_MS = REFRESH_MS + 250;
/** How long a command waits for a lock before it gives up with a one-line error. */
const WAIT_MS = 30_000;
/** The breaker is held for two syscalls; one watched unchanged this long was left by a process killed inside them. */
const BREAKER_STALE_MS = 2_000;
/**
 * proper-lockfile is told never to break a lock itself (see breakIfStale), nor to declare its own
 * lock compromised by the wall clock: both are wall-clock comparisons a clock jump of a day defeats.
 */
const NEVER_STALE_MS = 100 * 365 * 24 * 3600_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Sighting {
  mtimeMs: number;
  /** Monotonic ms since which the mtime has been seen unchanged. */
  since: number;
}

/** What one waiter has seen of the lock (and breaker) folders' mtimes, on its monotonic clock. */
class LockWatch {
  private readonly seen = new Map<string, Sighting>();

  /** The path's mtime, how long it has been watched unchanged, and its wall-clock age; undefined when gone. */
  look(file: string): { mtimeMs: number; unchangedMs: number; wallAgeMs: number } | undefined {
    const mtimeMs = mtimeOf(file);
    if (mtimeMs === undefined) {
      this.seen.delete(file);
      return undefined;
    }
    const now = monotonicMs();
    let sighting = this.seen.get(file);
    if (sighting?.mtimeMs !== mtimeMs) {
      sighting = { mtimeMs, since: now };
      this.seen.set(file, sighting);
    }
    return { mtimeMs, unchangedMs: now - sighting.since, wallAgeMs: Date.now() - mtimeMs };
  }
}

function mtimeOf(file: string): number | undefined {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

function isStale(s: { unchangedMs: number; wallAgeMs: number }, staleMs: number, quickMs: number): boolean {
  return s.unchangedMs >= staleMs || (s.unchangedMs >= quickMs && s.wallAgeMs >= staleMs);
}

/**
 * Removes a stale lock, one breaker at a time. proper-lockfile's own takeover (stat, rmdir, mkdir)
 * lets two waiters that both saw the stale lock both go in: the slower one removes the fresh lock
 * the faster one just made (proper-lockfile#121). Here the removal happens only while holding
 * `<lock>.break` (mkdir, atomic) and after a second look at the lock under it: only the very lock
 * this waiter watched go stale (same mtime) is removed, so one broken and re-taken meanwhile is left alone.
 */
function breakIfStale(lockPath: string, watch: LockWatch): void {
  const lock = watch.look(lockPath);
  if (lock === undefined || !isStale(lock, STALE_MS, QUICK_WATCH_MS)) return;
  const breaker = `${lockPath}.break`;
  try {
    mkdirSync(breaker);
  } catch {
    const held = watch.look(breaker);
    if (held !== undefined && isStale(held, BREAKER_STALE_MS, BREAKER_STALE_MS)) rmdirQuietly(breaker);
    return;
  }
  try {
    if (mtimeOf(lockPath) === lock.mtimeMs) rmdirQuietly(lockPath);
  } finally {
    rmdirQuietly(breaker);
  }
}

function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Gone already, or not a lock we understand: the wait ends in RegistryLockTimeout.
  }
}

export interface DirLock {
  /** The lock directory (made with mkdir, which is atomic on local disks and on NFS alike). */
  lockPath: string;
  /** What the lock guards: proper-lockfile keeps one table entry per guarded path and process. */
  guards: string;
  /** Named in errors: `registry`, `heartbeat`. */
  what: string;
}

/**
 * Runs `fn` while holding the registry lock (`<registry>/.lock`; the Python toolkit's flock was not
 * trusted on NFS). Every read-modify-write of any record goes through here.
 */
export function withRegistryLock<T>(registryDir: string, lockPath: string, fn: () => Promise<T> | T): Promise<T> {
  return withDirLock({ lockPath, guards: registryDir, what: 'registry' }, fn);
}

/**
 * Runs `fn` holding a mkdir lock: waits up to WAIT_MS, takes over a lock whose holder died (judged on
 * the monotonic clock, see LockWatch), and reports a lock lost while held when `fn` is done.
 */
export async function withDirLock<T>(lock: DirLock, fn: () => Promise<T> | T): Promise<T> {
  const { lockPath } = lock;
  mkdirSync(path.dirname(lockPath), { recursive: true, mode: 0o700 });
  const started = monotonicMs();
  const watch = new LockWatch();
  let compromised: Error | undefined;
  let release: () => Promise<void>;
  let delay = 5;
  for (;;) {
    try {
      release = await lockfile.lock(lock.guards, {
        lockfilePath: lockPath,
        realpath: false,
        stale: NEVER_STALE_MS,
        update: REFRESH_MS,
        // The default throws from a timer and kills the process with a stack trace; instead the
        // operation learns of it when it releases and reports one line.
        onCompromised: (err) => {
          compromised = err;
        },
      });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
      if (monotonicMs() - started > WAIT_MS) throw new LockTimeout(lockPath, lock.what, monotonicMs() - started);
      breakIfStale(lockPath, watch);
      await sleep(delay / 2 + Math.random() * delay);
      delay = Math.min(delay * 1.3, 50);
    }
  }
  let result: T;
  try {
    result = await fn();
  } finally {
    await release().catch(() => undefined);
  }
  // Reported only when `fn` itself succeeded: its own failure says more.
  if (compromised) throw new LockLost(lockPath, lock.what, compromised.message);
  return result;
}
