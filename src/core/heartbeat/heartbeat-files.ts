import { readFileSync, unlinkSync } from 'node:fs';
import lockfile from 'proper-lockfile';
import writeFileAtomic from 'write-file-atomic';
import { MamError } from '../errors.ts';
import type { JobRecord } from '../registry/job-record.ts';
import type { RegistryPaths } from '../registry/paths.ts';
import { FILE_MODE, ensureDir, writeJsonAtomic } from '../registry/record-store.ts';

/** The attempt whose terminal publish has begun: none of its beats may take a seq any more. */
export interface Barrier {
  attempt_id: number;
  dispatch_token: string;
}

/** As the registry lock: only a dead holder leaves a lock this old (proper-lockfile refreshes it). */
const STALE_MS = 5_000;
/** A start waits for a replaced timer's drain and a child's pidfile; a stop for one drain. */
const WAIT_MS = 30_000;

/** The heartbeat lock was lost while held (a suspended laptop, a clock jump). */
export class HeartbeatLockLost extends MamError {}

/**
 * The three files of contract §2 for one job's heartbeat: `<job>.heartbeat.pid` (the live timer),
 * `.lock` (serializes starts, replacements and stops) and `.barrier` (the terminal fence of §5).
 */
export class HeartbeatFiles {
  readonly pidFile: string;
  readonly lockFile: string;
  readonly barrierFile: string;
  private readonly dir: string;

  constructor(
    paths: RegistryPaths,
    readonly jobId: string,
  ) {
    this.pidFile = paths.heartbeat(jobId, 'pid');
    this.lockFile = paths.heartbeat(jobId, 'lock');
    this.barrierFile = paths.heartbeat(jobId, 'barrier');
    this.dir = paths.registryDir;
  }

  readPid(): number | undefined {
    let text: string;
    try {
      text = readFileSync(this.pidFile, 'utf8');
    } catch {
      return undefined;
    }
    const pid = Number(text.trim());
    return Number.isInteger(pid) && pid > 1 ? pid : undefined;
  }

  /** Atomic (temp + fsync + rename) so a stopper never reads half a pid. */
  async writePid(pid: number): Promise<void> {
    ensureDir(this.dir);
    await writeFileAtomic(this.pidFile, `${pid}\n`, { mode: FILE_MODE, fsync: true });
  }

  /**
   * Removes the pidfile if it still names `pid`. The read and the unlink are not one step, but no one
   * writes another pid while `pid` lives: a replacement first waits for it to die (under the lock).
   */
  removePidIf(pid: number): void {
    if (this.readPid() !== pid) return;
    try {
      unlinkSync(this.pidFile);
    } catch {
      // Already gone: what we wanted.
    }
  }

  /** The current barrier; a file that does not parse counts as a barrier for every attempt. */
  readBarrier(): Barrier | 'unreadable' | undefined {
    let text: string;
    try {
      text = readFileSync(this.barrierFile, 'utf8');
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : 'unreadable';
    }
    try {
      const b = JSON.parse(text) as Partial<Barrier>;
      if (Number.isInteger(b.attempt_id) && typeof b.dispatch_token === 'string') return b as Barrier;
    } catch {
      // fall through
    }
    return 'unreadable';
  }

  /**
   * Whether the barrier fences `attemptId`. It compares the attempt id, so the barrier an earlier
   * attempt left behind does not silence the beats of a redispatched one. An unreadable barrier
   * fences everything: a beat after a terminal is the one thing this file exists to prevent.
   */
  fences(attemptId: number): boolean {
    const barrier = this.readBarrier();
    if (barrier === undefined) return false;
    return barrier === 'unreadable' || barrier.attempt_id === attemptId;
  }

  /** Call under the registry lock, so that a beat's seq is taken either before it or never. */
  async writeBarrier(record: Pick<JobRecord, 'attempt_id' | 'dispatch_token'>): Promise<void> {
    const barrier: Barrier = { attempt_id: record.attempt_id, dispatch_token: record.dispatch_token };
    await writeJsonAtomic(this.barrierFile, barrier);
  }

  /** Runs `fn` holding `<job>.heartbeat.lock` (a mkdir lock, like the registry's; stale ones are taken over). */
  async withLock<T>(fn: () => Promise<T>): Promise<T> {
    ensureDir(this.dir);
    let compromised: Error | undefined;
    let release: () => Promise<void>;
    try {
      // Keyed by the pidfile (what the lock guards), so that proper-lockfile's per-process table
      // never confuses it with the registry lock, which is keyed by the registry folder.
      release = await lockfile.lock(this.pidFile, {
        lockfilePath: this.lockFile,
        realpath: false,
        stale: STALE_MS,
        retries: { retries: Math.ceil(WAIT_MS / 50), factor: 1.3, minTimeout: 5, maxTimeout: 50, randomize: true },
        onCompromised: (err) => {
          compromised = err;
        },
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOCKED') throw new MamError(`${this.lockFile}: heartbeat lock still held after ${WAIT_MS / 1000} s`);
      throw err;
    }
    try {
      return await fn();
    } finally {
      await release().catch(() => undefined);
      if (compromised) throw new HeartbeatLockLost(`${this.lockFile}: heartbeat lock was lost while held (${compromised.message})`);
    }
  }
}
