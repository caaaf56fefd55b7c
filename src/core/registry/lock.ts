import { mkdirSync, rmdirSync, statSync } from 'node:fs';
import lockfile from 'proper-lockfile';
import { MamError, RegistryLockTimeout } from '../errors.ts';

/**
 * A lock is stale when its mtime is older than this. The holder refreshes the mtime every
 * REFRESH_MS, so only a dead holder (SIGKILL, power loss) leaves one this old: the next command
 * takes it over within about five seconds.
 */
const STALE_MS = 5_000;
const REFRESH_MS = 1_000;
/** How long a command waits for the lock before it gives up with a one-line error. */
const WAIT_MS = 30_000;
/** The breaker is held for two syscalls; one this old was left by a process killed inside them. */
const BREAKER_STALE_MS = 2_000;
/** proper-lockfile is told never to break a lock itself (see breakIfStale). */
const NEVER_STALE_MS = 24 * 3600_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function ageMs(file: string): number | undefined {
  try {
    return Date.now() - statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

/**
 * Removes a stale lock, one breaker at a time. proper-lockfile's own takeover (stat, rmdir, mkdir)
 * lets two waiters that both saw the stale lock both go in: the slower one removes the fresh lock
 * the faster one just made (proper-lockfile#121). Here the removal happens only while holding
 * `<lock>.break` (mkdir, atomic) and after a second look at the lock under it, so a lock that was
 * broken and re-taken meanwhile is left alone.
 */
function breakIfStale(lockPath: string): void {
  const age = ageMs(lockPath);
  if (age === undefined || age < STALE_MS) return;
  const breaker = `${lockPath}.break`;
  try {
    mkdirSync(breaker);
  } catch {
    if ((ageMs(breaker) ?? 0) > BREAKER_STALE_MS) rmdirQuietly(breaker);
    return;
  }
  try {
    if ((ageMs(lockPath) ?? 0) >= STALE_MS) rmdirQuietly(lockPath);
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

/**
 * Runs `fn` while holding the registry lock (`<registry>/.lock`, a directory made with mkdir,
 * which is atomic on local disks and on NFS alike — the Python toolkit's flock was not trusted there).
 * Every read-modify-write of any record goes through here.
 */
export async function withRegistryLock<T>(registryDir: string, lockPath: string, fn: () => Promise<T> | T): Promise<T> {
  mkdirSync(registryDir, { recursive: true, mode: 0o700 });
  const started = Date.now();
  let compromised: Error | undefined;
  let release: () => Promise<void>;
  let delay = 5;
  for (;;) {
    try {
      release = await lockfile.lock(registryDir, {
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
      if (Date.now() - started > WAIT_MS) throw new RegistryLockTimeout(lockPath, Date.now() - started);
      breakIfStale(lockPath);
      await sleep(delay / 2 + Math.random() * delay);
      delay = Math.min(delay * 1.3, 50);
    }
  }
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined);
    if (compromised) throw new MamError(`${lockPath}: registry lock was lost while held (${compromised.message})`);
  }
}
