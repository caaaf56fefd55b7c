// Runs one of dist/'s bundles with a V8 code cache, so that a bin's second start skips compiling
// what its first start compiled. Every agent event is a new mam-publish process, and compiling the
// bundle is about a fifth of one (bench/README.md has the numbers).
//
// Node 22 does this itself (module.enableCompileCache); Node 20 does not, so this uses vm.Script's
// cachedData, written after the run so that it holds every function the command compiled.
// Anything unexpected (no cache folder, one others can write, a rejected or unreadable cache) falls
// back to compiling: the cache only ever saves time, it never decides what runs. MAM_CODE_CACHE=0
// turns it off.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');

const HELP_OR_VERSION = new Set(['-h', '--help', 'help', '-V', '--version']);

/** Runs `dist/<name>.cjs`, e.g. `loadBundle('mam-publish')`. */
function loadBundle(name) {
  loadBundleFile(path.join(__dirname, '..', 'dist', `${name}.cjs`));
}

/** Runs the bundle at `file` (a `.cjs` file); its code cache is named after the file. */
function loadBundleFile(file) {
  const name = path.basename(file, '.cjs');
  const dir = cacheDir();
  if (!dir) return void require(file);

  let source;
  let cacheFile;
  try {
    const bytes = fs.readFileSync(file);
    // V8 checks its own version and flags (the tag) and the source's length, not its content; npm
    // gives every installed file the same mtime. A hash of the bundle makes any other build miss
    // this cache. Hashed as bytes (under 1 ms; crypto is loaded by every bin anyway): hashing the
    // decoded string encodes it back to UTF-8 first, ~5 ms for mam.cjs.
    const tag = require('node:v8').cachedDataVersionTag();
    const digest = require('node:crypto').createHash('sha256').update(bytes).digest('hex').slice(0, 16);
    source = bytes.toString('utf8');
    cacheFile = path.join(dir, `${name}.${tag}.${digest}.v8cache`);
  } catch {
    return void require(file);
  }
  let cached;
  try {
    // Compiled code is trusted like the bundle itself: only from a folder that no one else can write.
    if (!isPrivate(dir)) return void require(file);
    cached = fs.readFileSync(cacheFile);
  } catch {
    cached = undefined;
  }

  // No dynamic import() can run in this script (scripts/build.mjs refuses a bundle that has one).
  const script = new (require('node:vm').Script)(Module.wrap(source), { filename: file, cachedData: cached });
  if (cached === undefined || script.cachedDataRejected) {
    // Only a run that did a command's work makes the cache: one made by `--help` or a usage error
    // (exit 64) holds little of the code, and every later start would compile the rest. Outcomes
    // such as 2 (not delivered) or 4 (nothing to pick) ran it all.
    process.once('exit', (code) => {
      if (code !== 64 && !process.argv.slice(2).some((a) => HELP_OR_VERSION.has(a))) writeCache(script, dir, cacheFile, name);
    });
  }
  const mod = new Module(file, module);
  mod.filename = file;
  mod.paths = Module._nodeModulePaths(path.dirname(file));
  Module._cache[file] = mod;
  const requireFn = (id) => mod.require(id);
  requireFn.resolve = (request, options) => Module._resolveFilename(request, mod, false, options);
  requireFn.main = require.main;
  requireFn.cache = Module._cache;
  script.runInThisContext().call(mod.exports, mod.exports, requireFn, mod, file, path.dirname(file));
  mod.loaded = true;
}

module.exports = loadBundle;

// `node load-bundle.cjs <bundle.cjs> args…`: how the heartbeat timer is spawned. The bundle sees
// the argv it would see if run directly; /proc still shows its path (the timer is found by it).
if (require.main === module) {
  const [file] = process.argv.splice(2, 1);
  process.argv[1] = file;
  loadBundleFile(path.resolve(file));
}

/** `$XDG_CACHE_HOME/mam/v8` or `~/.cache/mam/v8`, private to the user (0700); undefined when off. */
function cacheDir() {
  if (process.env.MAM_CODE_CACHE === '0') return undefined;
  const base = process.env.XDG_CACHE_HOME || (process.env.HOME ? path.join(process.env.HOME, '.cache') : undefined);
  return base && path.isAbsolute(base) ? path.join(base, 'mam', 'v8') : undefined;
}

/** True when `dir` is a folder of this user's that neither group nor others can write; false if it is not. Throws when missing. */
function isPrivate(dir) {
  const st = fs.lstatSync(dir);
  return st.isDirectory() && (typeof process.getuid !== 'function' || st.uid === process.getuid()) && (st.mode & 0o022) === 0;
}

/** Atomically replaces this bin's cache, and drops its other files (other builds or Node versions, temp files). */
function writeCache(script, dir, cacheFile, name) {
  try {
    const data = script.createCachedData();
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!isPrivate(dir)) return;
    const tmp = `${cacheFile}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, data, { mode: 0o600 });
    fs.renameSync(tmp, cacheFile);
    for (const f of fs.readdirSync(dir)) {
      // Other builds' caches, and temp files of writers killed before their rename.
      if (f.startsWith(`${name}.`) && path.join(dir, f) !== cacheFile) fs.rmSync(path.join(dir, f), { force: true });
    }
  } catch {
    // A read-only or full disk costs the next start its compile time, nothing else.
  }
}
