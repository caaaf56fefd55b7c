import { mkdirSync } from 'node:fs';
import lockfile from 'proper-lockfile';
import { MamError, RegistryLockTimeout } from '../errors.ts';

/**
 * A lock is stale when its mtime is older than this. proper-lockfile refreshes the mtime of a held
 * lock every STALE_MS / 2, so only a dead holder (SIGKILL, power loss) leaves one this old: the next
 * command takes it over within about five seconds. 5 s is the library's minimum.
 */
const STALE_MS = 5_000;
/** How long a command waits for the lock before it gives up with a one-line error. */
const WAIT_MS = 30_000;

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
  try {
    release = await lockfile.lock(registryDir, {
      lockfilePath: lockPath,
      realpath: false,
      stale: STALE_MS,
      retries: { retries: Math.ceil(WAIT_MS / 50), factor: 1.3, minTimeout: 5, maxTimeout: 50, randomize: true },
      // The default throws from a timer and kills the process with a stack trace; instead the
      // operation learns of it when it releases and reports one line.
      onCompromised: (err) => {
        compromised = err;
      },
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOCKED') throw new RegistryLockTimeout(lockPath, Date.now() - started);
    throw err;
  }
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined);
    if (compromised) throw new MamError(`${lockPath}: registry lock was lost while held (${compromised.message})`);
  }
}
