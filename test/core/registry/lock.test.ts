import { existsSync, mkdirSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sleep } from '../../helpers/wait.ts';
import { withRegistryLock } from '../../../src/core/registry/lock.ts';
import { tempDirForTest } from '../../helpers/temp-dir.ts';

function staleLock(): { dir: string; lock: string } {
  const dir = tempDirForTest('mam-lock-');
  const lock = path.join(dir, '.lock');
  mkdirSync(lock);
  const old = new Date(Date.now() - 60_000);
  utimesSync(lock, old, old);
  return { dir, lock };
}

/** Runs `n` lockers at once and reports the most that were ever inside together. */
async function contend(dir: string, lock: string, n: number, holdMs: number): Promise<number> {
  let inside = 0;
  let most = 0;
  await Promise.all(
    Array.from({ length: n }, () =>
      withRegistryLock(dir, lock, async () => {
        inside++;
        most = Math.max(most, inside);
        await sleep(holdMs);
        inside--;
      }),
    ),
  );
  return most;
}

describe('withRegistryLock', () => {
  it('serialises lockers and removes the lock when done', async () => {
    const dir = tempDirForTest('mam-lock-');
    const lock = path.join(dir, '.lock');
    expect(await contend(dir, lock, 6, 5)).toBe(1);
    expect(existsSync(lock)).toBe(false);
  });

  it('a lock left by a dead holder is taken over at once', async () => {
    const { dir, lock } = staleLock();
    const started = Date.now();
    expect(await withRegistryLock(dir, lock, () => 'ran')).toBe('ran');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  // Breaking a stale lock must have one winner: two waiters that both judged it stale must not both
  // remove it, or the slower one removes the winner's fresh lock and both go in (proper-lockfile#121).
  it('many waiters racing for one stale lock: never two inside', async () => {
    for (let round = 0; round < 15; round++) {
      const { dir, lock } = staleLock();
      expect(await contend(dir, lock, 8, 15)).toBe(1);
    }
  });

  it('an error in the critical section releases the lock', async () => {
    const dir = tempDirForTest('mam-lock-');
    const lock = path.join(dir, '.lock');
    await expect(withRegistryLock(dir, lock, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(existsSync(lock)).toBe(false);
    expect(await withRegistryLock(dir, lock, () => 1)).toBe(1);
  });
});
