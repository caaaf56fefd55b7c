import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** CLI tests spawn the built bins, so every run builds first (about a second with esbuild). */
export default function setup(): void {
  const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
  execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { stdio: 'inherit' });
}
