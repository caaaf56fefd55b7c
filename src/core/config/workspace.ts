import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * The workspace root (contract §2): `MAM_REAL_ROOT`, else `WORKSPACE_ROOT`, else the nearest
 * ancestor of `cwd` holding `.agents` or `.git`, else `cwd` itself.
 */
export function findWorkspaceRoot(env: NodeJS.ProcessEnv, cwd: string): string {
  const explicit = env.MAM_REAL_ROOT || env.WORKSPACE_ROOT;
  if (explicit) return path.resolve(cwd, explicit);
  let dir = path.resolve(cwd);
  for (;;) {
    if (existsSync(path.join(dir, '.agents')) || existsSync(path.join(dir, '.git'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return path.resolve(cwd);
    dir = parent;
  }
}
