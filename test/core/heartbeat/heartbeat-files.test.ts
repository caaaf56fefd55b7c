import { spawn } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { HeartbeatFiles } from '../../../src/core/heartbeat/heartbeat-files.ts';
import { isAlive, isHeartbeatTimer } from '../../../src/core/heartbeat/proc.ts';
import { fenceHeartbeat } from '../../../src/core/heartbeat/terminal-fence.ts';
import { parseTimerArgs, timerArgv } from '../../../src/core/heartbeat/timer-args.ts';
import { stopHeartbeat, timerScriptPath } from '../../../src/core/heartbeat/timer-control.ts';
import { input, tempRegistry } from '../registry/registry-fixtures.ts';

const mode = (file: string) => statSync(file).mode & 0o777;
const doomed: number[] = [];
afterEach(() => {
  for (const pid of doomed.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

describe('HeartbeatFiles', () => {
  it('writes the pidfile atomically with mode 0600 and removes it only while it names the given pid', async () => {
    const { registry } = tempRegistry();
    const files = new HeartbeatFiles(registry.paths, 'abcd0123');
    expect(files.readPid()).toBeUndefined();
    await files.writePid(4242);
    expect(files.readPid()).toBe(4242);
    expect(mode(files.pidFile)).toBe(0o600);
    files.removePidIf(4343);
    expect(files.readPid()).toBe(4242);
    files.removePidIf(4242);
    expect(existsSync(files.pidFile)).toBe(false);
  });

  it('a barrier fences its own attempt only; an unreadable one fences every attempt', async () => {
    const { registry } = tempRegistry();
    const files = new HeartbeatFiles(registry.paths, 'abcd0123');
    expect(files.fences(1)).toBe(false);
    await files.writeBarrier({ attempt_id: 2, dispatch_token: 'a'.repeat(32) });
    expect(files.readBarrier()).toEqual({ attempt_id: 2, dispatch_token: 'a'.repeat(32) });
    expect(mode(files.barrierFile)).toBe(0o600);
    expect(files.fences(2)).toBe(true);
    expect(files.fences(3)).toBe(false);
    writeFileSync(files.barrierFile, '{"attempt_id": ');
    expect(files.fences(3)).toBe(true);
  });

  it('serializes holders of the heartbeat lock, and it is not the registry lock', async () => {
    const { registry } = tempRegistry();
    const files = new HeartbeatFiles(registry.paths, 'abcd0123');
    const order: string[] = [];
    const a = files.withLock(async () => {
      order.push('a in');
      // Holding the heartbeat lock does not block the registry (a beat must commit while a stop waits).
      await registry.withLock(() => order.push('registry'));
      await new Promise((r) => setTimeout(r, 50));
      order.push('a out');
    });
    const b = files.withLock(async () => order.push('b'));
    await Promise.all([a, b]);
    expect(order).toEqual(['a in', 'registry', 'a out', 'b']);
  });
});

describe('timer arguments', () => {
  it('round-trip through argv, and a bad one is refused', () => {
    const args = { jobId: 'abcd0123', registryDir: '/r', logDir: '/l', attemptId: 3, dispatchToken: 'f'.repeat(32), periodSec: 0.5, watchPid: 77 };
    expect(parseTimerArgs(timerArgv(args))).toEqual(args);
    expect(() => parseTimerArgs(timerArgv({ ...args, periodSec: 0 }))).toThrow(/--period/);
    expect(() => parseTimerArgs(['--job', 'abcd0123'])).toThrow(/required/);
  });

  it('the timer script is found next to the bundle (built by the test setup)', () => {
    expect(timerScriptPath()).toMatch(/dist\/mam-heartbeat\.cjs$/);
  });
});

describe('stopping and fencing (no broker needed)', () => {
  it('never signals a process that a stale pidfile names but that is no heartbeat timer', async () => {
    const { registry } = tempRegistry();
    const job = await registry.register(input());
    const bystander = spawn('sleep', ['30'], { stdio: 'ignore' });
    doomed.push(bystander.pid!);
    const files = new HeartbeatFiles(registry.paths, job.job_id);
    await files.writePid(bystander.pid!);
    expect(isHeartbeatTimer(bystander.pid!, job.job_id)).toBe(false);
    await stopHeartbeat(registry, job.job_id, 100);
    expect(isAlive(bystander.pid!)).toBe(true);
    expect(files.readPid()).toBeUndefined();
  });

  it('a terminal that the registry will accept writes the barrier of the current attempt', async () => {
    const { registry } = tempRegistry();
    const job = await registry.register(input());
    await fenceHeartbeat(registry, { jobId: job.job_id, event: 'completed' }, 100);
    expect(new HeartbeatFiles(registry.paths, job.job_id).readBarrier()).toEqual({ attempt_id: 1, dispatch_token: job.dispatch_token });
  });

  it('a terminal that will be refused (stale attempt, terminal job) fences nothing', async () => {
    const { registry } = tempRegistry();
    const job = await registry.register(input());
    await registry.redispatch(job.job_id);
    const files = new HeartbeatFiles(registry.paths, job.job_id);
    await fenceHeartbeat(registry, { jobId: job.job_id, event: 'completed', expectAttemptId: 1 }, 100);
    await fenceHeartbeat(registry, { jobId: job.job_id, event: 'error' }, 100); // attempt 2 needs a fence
    expect(files.readBarrier()).toBeUndefined();
    await registry.close(job.job_id, 'cancelled');
    await fenceHeartbeat(registry, { jobId: job.job_id, event: 'completed', expectAttemptId: 2 }, 100);
    expect(files.readBarrier()).toBeUndefined();
  });
});
