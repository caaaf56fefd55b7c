import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * CLI tests spawn the built bins, so every run builds first (about a second with esbuild). The TLS
 * suites need a CA and certificates: they are generated here, per clone, and never committed.
 */
export default function setup(): void {
  const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
  execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { stdio: 'inherit' });
  const certs = path.join(root, 'test/fixtures/brokers');
  if (!existsSync(path.join(certs, 'client.key'))) execFileSync('sh', [path.join(certs, 'gen-certs.sh')], { stdio: 'ignore' });
}
