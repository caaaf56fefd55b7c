import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let packageRoot: string | undefined;

/**
 * The package's own folder, found from this module's location, so it works from `src/` (tests),
 * from the bundles in `dist/` and through npm's `.bin` links alike.
 */
export function findPackageRoot(): string {
  if (packageRoot) return packageRoot;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'mam-toolkit') {
      packageRoot = dir;
      return dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the mam-toolkit package folder');
    dir = parent;
  }
}

/** Absolute path of one of the package's bins, e.g. `binPath('mam-publish')`. */
export function binPath(bin: string): string {
  return path.join(findPackageRoot(), 'bin', `${bin}.js`);
}

/** Quotes a word for `sh -c` only when it needs it. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * `MAM_PUBLISH_CMD`: the exact command line an agent runs to publish for its job (the node binary
 * is named too, so it works whatever `node` is on the agent's PATH).
 */
export function publishCommandLine(jobId: string): string {
  return [process.execPath, binPath('mam-publish'), '--job', jobId].map(shellQuote).join(' ');
}
