import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

export interface TempDir {
  path: string;
  cleanup(): void;
}

// Every folder is also removed when the process exits, so a test that forgets cleanup() (or is
// interrupted by a timeout) leaves nothing in /tmp.
const live = new Set<string>();
process.once('exit', () => {
  for (const dir of live) rmSync(dir, { recursive: true, force: true });
});

/** A fresh folder (mode 0700, like the registry's) under the OS temp dir. */
export function makeTempDir(prefix = 'mam-test-'): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  live.add(path);
  return {
    path,
    cleanup() {
      live.delete(path);
      rmSync(path, { recursive: true, force: true });
    },
  };
}

/** Inside a test: a temp folder removed when that test finishes, pass or fail. */
export function tempDirForTest(prefix?: string): string {
  const dir = makeTempDir(prefix);
  onTestFinished(() => dir.cleanup());
  return dir.path;
}
