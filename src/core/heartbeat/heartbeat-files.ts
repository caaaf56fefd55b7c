import { readFileSync, unlinkSync } from 'node:fs';
import writeFileAtomic from 'write-file-atomic';
import type { JobRecord } from '../registry/job-record.ts';
import { withDirLock } from '../registry/lock.ts';
import type { RegistryPaths } from '../registry/paths.ts';
import { FILE_MODE, ensureDir, writeJsonAtomic } from '../registry/record-store.ts';
import { refuseSymlink } from '../private-places.ts';

/** The attempt whose terminal publish has begun: none of its beats may take a seq any more. */
export interface Barrier {
  attempt_id: number;
  dispatch_token: string;
}

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
    refuseSymlink(this.pidFile);
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

  /**
   * Runs `fn` holding `<job>.heartbeat.lock`: the registry's kind of lock, with its staleness judged
   * on the monotonic clock. It guards the pidfile, so proper-lockfile's per-process table never
   * confuses it with the registry lock, which guards the registry folder.
   */
  withLock<T>(fn: () => Promise<T>): Promise<T> {
    return withDirLock({ lockPath: this.lockFile, guards: this.pidFile, what: 'heartbeat' }, fn);
  }
}
