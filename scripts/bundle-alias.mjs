// The module aliases every bundle of MAM's is built with (scripts/build.mjs for the bins, and
// bench/run.mjs for its Node-floor baseline, which must load what a bin loads).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

// readable-stream (via bl, in mqtt-packet) is a userland copy of Node's own stream module: the
// built-in serves it and saves ~180 KB of parsing per start. `debug` is never enabled here.
export const bundleAlias = {
  'readable-stream': 'node:stream',
  ...(process.env.MAM_BUILD_KEEP_DEBUG ? {} : { debug: path.join(root, 'scripts/shims/debug.cjs') }),
};
