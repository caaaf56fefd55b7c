// Bundles each bin into dist/ with esbuild: one file per entry plus shared chunks, so a command
// loads only the code it runs (start-up is most of the cost of a one-event process).
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const entryPoints = readdirSync(path.join(root, 'src/bin'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => path.join(root, 'src/bin', f));

await build({
  entryPoints,
  outdir: path.join(root, 'dist'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  // Native or worker-thread code stays outside the bundle and is resolved from node_modules.
  external: ['level', 'classic-level', 'aedes-persistence-level', 'thread-stream', 'pino-pretty', 'bufferutil', 'utf-8-validate'],
  // Bundled CommonJS dependencies may call require(); give them one.
  banner: {
    js: [
      "import { createRequire as __mamCreateRequire } from 'node:module';",
      "import { fileURLToPath as __mamFileURLToPath } from 'node:url';",
      'const require = __mamCreateRequire(import.meta.url);',
      'const __filename = __mamFileURLToPath(import.meta.url);',
      "const __dirname = __mamFileURLToPath(new URL('.', import.meta.url));",
    ].join(' '),
  },
  logLevel: 'warning',
  legalComments: 'none',
});
