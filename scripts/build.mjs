// Bundles each bin with esbuild into one CommonJS file in dist/: a command is a process per agent
// event, and start-up is most of its cost. Measured on the publish path: one CommonJS file per bin
// starts ~100 ms faster than ESM with shared chunks (no module graph to resolve and link), and
// dynamic imports still defer the evaluation of code a command does not run.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundleAlias } from './bundle-alias.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const entryPoints = readdirSync(path.join(root, 'src/bin'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => path.join(root, 'src/bin', f));

// Built-ins and small dependencies that a bin loaded at start-up and rarely or never uses, each
// served by a stand-in in scripts/shims/ that says why that is safe: child_process (lazy),
// worker_threads (write-file-atomic's), signal-exit 3 and graceful-fs (proper-lockfile's). A
// publish loads no worker_threads, child_process, assert or fs streams any more: ~7 ms CPU and
// 1.4 MiB of peak RSS less (bench/README.md). Scoped by importer, so no other package sees one;
// test/cli/startup-shims.test.ts holds the list.
const requireFromRoot = createRequire(path.join(root, 'package.json'));
const shim = (name) => path.join(root, 'scripts/shims', name);
const startupShims = {
  name: 'startup-shims',
  setup(b) {
    b.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      args.importer === shim('lazy-child-process.cjs') ? { path: 'node:child_process', external: true } : { path: shim('lazy-child-process.cjs') },
    );
    b.onResolve({ filter: /^(node:)?worker_threads$/ }, (args) =>
      args.importer.includes(`${path.sep}write-file-atomic${path.sep}`) ? { path: shim('main-thread-worker-threads.cjs') } : undefined,
    );
    b.onResolve({ filter: /^signal-exit$/ }, (args) =>
      args.importer.includes(`${path.sep}proper-lockfile${path.sep}`) ? { path: shim('signal-exit-v3.cjs') } : undefined,
    );
    b.onResolve({ filter: /^graceful-fs$/ }, (args) =>
      args.importer.includes(`${path.sep}proper-lockfile${path.sep}`) ? { path: shim('graceful-fs.cjs') } : undefined,
    );
    b.onResolve({ filter: /^signal-exit-v4$/ }, () => {
      const fromWriteFileAtomic = createRequire(requireFromRoot.resolve('write-file-atomic'));
      // Found through write-file-atomic, which depends on version 4; any other layout must fail here,
      // not as an undefined onExit in every bin.
      if (typeof fromWriteFileAtomic('signal-exit').onExit !== 'function') throw new Error('build: signal-exit 4 (onExit) not found beside write-file-atomic');
      return { path: fromWriteFileAtomic.resolve('signal-exit') };
    });
  },
};

await build({
  entryPoints,
  plugins: [startupShims],
  outdir: path.join(root, 'dist'),
  outExtension: { '.js': '.cjs' },
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // Native or worker-thread code stays outside the bundle and is resolved from node_modules; so does
  // smol-toml (25 KB), read only when a Codex session starts: every `mam` start (each agent hook is
  // one) would otherwise parse it.
  external: ['level', 'classic-level', 'aedes-persistence-level', 'thread-stream', 'pino-pretty', 'bufferutil', 'utf-8-validate', 'smol-toml'],
  alias: bundleAlias,
  // The sources are ESM and find files next to themselves through import.meta.url.
  define: {
    'import.meta.url': '__mamImportMetaUrl',
    // A string, parsed by the shim: an array here becomes a module of its own that esbuild initialises
    // at the top of every module of the bundle.
    __MAM_CHILD_PROCESS_EXPORTS__: JSON.stringify(JSON.stringify(Object.keys(requireFromRoot('node:child_process')))),
  },
  banner: { js: "const __mamImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
  legalComments: 'none',
});

// bin/load-bundle.cjs runs a bundle as a vm.Script, where a dynamic import() has no loader: externals
// are loaded with require (createRequire), and the bundler turns imports of our own modules into
// requires. A bundle that still holds one would fail only when that line runs, so fail here.
for (const f of readdirSync(path.join(root, 'dist')).filter((f) => f.endsWith('.cjs'))) {
  if (/[^\w$.]import\(/.test(readFileSync(path.join(root, 'dist', f), 'utf8'))) {
    console.error(`build: dist/${f} holds a dynamic import(), which bin/load-bundle.cjs cannot run; load that module with createRequire`);
    process.exit(1);
  }
}

// The library API (package.json `exports`): ESM and declarations in dist/lib, compiled by tsc, not
// bundled, since its dependencies are the package's own and a program that embeds MAM shares them.
// Emptied first, so that no module of an earlier layout ships.
rmSync(path.join(root, 'dist/lib'), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
if (spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' }).status !== 0) {
  console.error('build: tsc -p tsconfig.build.json failed (the library API in dist/lib)');
  process.exit(1);
}
