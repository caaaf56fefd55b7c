import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { MamError } from '../errors.ts';
import { monotonicMs } from '../monotonic.ts';
import { isTerminalStatus } from '../vocabulary.ts';
import type { Registry } from '../registry/registry.ts';
import { HeartbeatFiles } from './heartbeat-files.ts';
import { isAlive, isHeartbeatTimer, waitForExit } from './proc.ts';
import { type TimerArgs, timerArgv } from './timer-args.ts';

/** A new timer writes its pidfile within a Node start-up; this bounds a machine under heavy load. */
const PIDFILE_WAIT_MS = 10_000;
/** After SIGKILL the kernel needs only a moment; this bounds a process stuck in uninterruptible I/O. */
const KILL_WAIT_MS = 2_000;

export type StartOutcome = { armed: true; pid: number } | { armed: false; reason: string };

/**
 * `dist/mam-heartbeat.cjs`, found from the running bundle (a sibling in `dist/`), or from the
 * TypeScript sources (tests), the built `dist/`.
 */
export function timerScriptPath(from: string = import.meta.url): string {
  const here = path.dirname(fileURLToPath(from));
  const candidates = [here, path.dirname(here), path.resolve(here, '../../../dist')].map((d) => path.join(d, 'mam-heartbeat.cjs'));
  const found = candidates.find((c) => existsSync(c));
  if (found === undefined) throw new MamError(`heartbeat timer not found (looked for ${candidates.join(', ')}); run the build`);
  return found;
}

/**
 * How to start the timer: through `bin/load-bundle.cjs` when it is there, for its V8 code cache
 * (a `started --heartbeat` waits for the timer to record its pid), else the bundle itself.
 */
function timerLaunch(): string[] {
  const script = timerScriptPath();
  const loader = path.join(path.dirname(script), '..', 'bin', 'load-bundle.cjs');
  return existsSync(loader) ? [loader, script] : [script];
}

/**
 * Arms the heartbeat of contract §5 for the attempt that just published `started`. Under the
 * heartbeat lock: an attempt that already ended (terminal record, redispatched, or its barrier
 * written) arms nothing; a previous timer is stopped first; and the lock is held until the new timer
 * has written its pidfile, so that a stop that comes next always finds the timer it must stop.
 */
export async function startHeartbeat(
  registry: Registry,
  args: Omit<TimerArgs, 'registryDir' | 'logDir'>,
  drainMs: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<StartOutcome> {
  const files = new HeartbeatFiles(registry.paths, args.jobId);
  return files.withLock(async () => {
    const record = registry.read(args.jobId);
    if (isTerminalStatus(record.status)) return { armed: false, reason: `job is already ${record.status}` };
    if (record.attempt_id !== args.attemptId || record.dispatch_token !== args.dispatchToken) {
      return { armed: false, reason: `attempt ${args.attemptId} is no longer current (attempt ${record.attempt_id} is)` };
    }
    if (files.fences(args.attemptId)) return { armed: false, reason: `attempt ${args.attemptId} has ended (heartbeat barrier)` };
    await stopTimerLocked(files, drainMs);
    const child = spawn(
      process.execPath,
      [...timerLaunch(), ...timerArgv({ ...args, registryDir: registry.paths.registryDir, logDir: registry.paths.logDir })],
      {
        detached: true,
        stdio: 'ignore',
        env,
      },
    );
    child.unref();
    const pid = child.pid;
    if (pid === undefined) {
      const err = await new Promise<Error>((resolve) => child.once('error', resolve));
      throw new MamError(`heartbeat timer did not start: ${err.message}`);
    }
    let exitCode: number | null | undefined;
    child.once('exit', (code) => (exitCode = code));
    const deadline = monotonicMs() + PIDFILE_WAIT_MS; // monotonic, like every deadline here
    while (files.readPid() !== pid) {
      // 0: it recorded its pid, found the attempt over (a close raced us) and cleaned up.
      if (exitCode === 0) return { armed: false, reason: 'the attempt ended while the timer started' };
      if (exitCode !== undefined) throw new MamError('heartbeat timer exited before it recorded its pid');
      if (monotonicMs() >= deadline) {
        child.kill('SIGKILL');
        throw new MamError(`heartbeat timer did not record its pid within ${PIDFILE_WAIT_MS / 1000} s`);
      }
      await sleep(10);
    }
    return { armed: true, pid };
  });
}

/** Stops the job's timer, if one runs: SIGTERM, up to `drainMs` for its in-flight beat, then SIGKILL. */
export async function stopHeartbeat(registry: Registry, jobId: string, drainMs: number): Promise<void> {
  const files = new HeartbeatFiles(registry.paths, jobId);
  await files.withLock(() => stopTimerLocked(files, drainMs));
}

/** Call holding the heartbeat lock. Returns the pid it stopped, if any. */
export async function stopTimerLocked(files: HeartbeatFiles, drainMs: number): Promise<number | undefined> {
  const pid = files.readPid();
  if (pid === undefined) return undefined;
  // A pid whose timer died without cleaning up may since belong to someone else's process.
  if (!isAlive(pid) || !isHeartbeatTimer(pid, files.jobId)) {
    files.removePidIf(pid);
    return undefined;
  }
  signal(pid, 'SIGTERM');
  // The timer ends its in-flight beat (commit + PUBACK) and exits; one stuck offline is killed.
  if (!(await waitForExit(pid, drainMs))) {
    signal(pid, 'SIGKILL');
    if (!(await waitForExit(pid, KILL_WAIT_MS))) throw new MamError(`heartbeat timer ${pid} survived SIGKILL`);
  }
  files.removePidIf(pid);
  return pid;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}
