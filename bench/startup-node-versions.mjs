// `node bench/startup-node-versions.mjs`: the start of a bin with bin/load-bundle.cjs's V8 code
// cache (vm.Script cachedData) against Node's own compile cache (module.enableCompileCache, 22.1+)
// and against no cache, on this machine's Node and on Node 22 and 24 (found as
// scripts/test-node-versions.mjs finds them). Alternated rounds (BENCH_ROUNDS, default 21), medians.
// bench/README.md ("Node 22 and 24: the compile cache") has the numbers and what was decided.
//
// BENCH_ALT_LOADER=/path/to/load-bundle.cjs adds a row for another version of the loader, so that a
// change to it is measured against the shipped one in the same rounds.
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findNode } from '../scripts/test-node-versions.mjs';
import { ROOT, run, startMosquitto, stats, workspace } from './lib.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 21);

// A copy of the package (bin/, dist/'s bundles, package.json; node_modules linked): tests rebuild
// dist/ while they run, and a rebuild in the middle would turn every later round into a first run.
const tmp = mkdtempSync(path.join(os.tmpdir(), 'mam-bench-startup-'));
const pkg = path.join(tmp, 'pkg');
cpSync(path.join(ROOT, 'bin'), path.join(pkg, 'bin'), { recursive: true });
mkdirSync(path.join(pkg, 'dist'));
for (const f of readdirSync(path.join(ROOT, 'dist')).filter((f) => f.endsWith('.cjs'))) copyFileSync(path.join(ROOT, 'dist', f), path.join(pkg, 'dist', f));
copyFileSync(path.join(ROOT, 'package.json'), path.join(pkg, 'package.json'));
symlinkSync(path.join(ROOT, 'node_modules'), path.join(pkg, 'node_modules'));

// Node's compile cache, in the same folder rules as the loader's own: `node launcher <bundle> args…`.
const compileCacheLauncher = path.join(pkg, 'bin', 'compile-cache-launcher.cjs');
writeFileSync(
  compileCacheLauncher,
  `'use strict';
const path = require('node:path');
const [file] = process.argv.splice(2, 1);
process.argv[1] = file;
require('node:module').enableCompileCache(path.join(process.env.XDG_CACHE_HOME, 'mam', 'v8'));
require(path.resolve(file));
`,
);
const altLoader = process.env.BENCH_ALT_LOADER;
if (altLoader) copyFileSync(path.resolve(altLoader), path.join(pkg, 'bin', 'alt-load-bundle.cjs'));

const broker = await startMosquitto();
const ws = workspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port), MAM_LOG_LEVEL: 'warn' });
const register = () =>
  JSON.parse(run(process.execPath, [path.join(pkg, 'bin/mam-register.js'), '--brief', 'bench'], ws, { MAM_CODE_CACHE: '0' }).stdout).job_id;
const job = register();
for (let i = 0; i < 4; i++) register();

/** What is started: a bin and its arguments. */
const COMMANDS = {
  'mam-publish (one event)': ['mam-publish', '--job', job, '--event', 'progress'],
  'mam-publish --help': ['mam-publish', '--help'],
  'mam jobs': ['mam', 'jobs'],
};

/** How it is started, `[node, args, env]`: each way with its own cache folder. */
function loaders(node, version, hasCompileCache) {
  const cacheHome = (name) => {
    const dir = path.join(tmp, `${version}-${name}`);
    mkdirSync(dir, { recursive: true });
    return dir;
  };
  const viaBin =
    (env) =>
    ([bin, ...args]) => [node, [path.join(pkg, 'bin', `${bin}.js`), ...args], env];
  const viaLauncher =
    (launcher, env) =>
    ([bin, ...args]) => [node, [launcher, path.join(pkg, 'dist', `${bin}.cjs`), ...args], env];
  return {
    'load-bundle.cjs (vm.Script cachedData)': viaBin({ XDG_CACHE_HOME: cacheHome('vm-script') }),
    ...(altLoader ? { 'alternative loader': viaLauncher(path.join(pkg, 'bin', 'alt-load-bundle.cjs'), { XDG_CACHE_HOME: cacheHome('alt') }) } : {}),
    ...(hasCompileCache ? { 'module.enableCompileCache': viaLauncher(compileCacheLauncher, { XDG_CACHE_HOME: cacheHome('compile-cache') }) } : {}),
    'no cache (MAM_CODE_CACHE=0)': viaBin({ MAM_CODE_CACHE: '0' }),
  };
}

const nodes = [process.execPath];
for (const major of [22, 24]) {
  const found = findNode(major);
  if (found.node) nodes.push(found.node);
  else console.error(`SKIPPED: Node ${major} — ${found.missing ?? found.wrong}`);
}

const PUBLISH = 'mam-publish (one event)';
const results = { at: new Date().toISOString(), cpus: os.cpus().length, rounds: ROUNDS, nodes: {} };
for (const node of nodes) {
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const hasCompileCache = spawnSync(node, ['-p', "typeof require('node:module').enableCompileCache"], { encoding: 'utf8' }).stdout.trim() === 'function';
  const ways = loaders(node, version, hasCompileCache);
  const cases = Object.entries(COMMANDS).flatMap(([command, argv]) => Object.entries(ways).map(([loader, how]) => ({ command, loader, start: how(argv) })));
  // A first run after an install: the run that makes the cache (a publish, in a fresh folder each round).
  for (const [loader, how] of Object.entries(ways).filter(([loader]) => !loader.startsWith('no cache'))) {
    const [cmd, args, env] = how(COMMANDS[PUBLISH]);
    cases.push({ command: `${PUBLISH}, first run`, loader, start: [cmd, args, env], fresh: true });
  }
  // Warm-up, in order: the publish makes each cache (the loader makes none on --help), later runs use it.
  for (const { start } of cases.filter((c) => !c.fresh)) for (let i = 0; i < 2; i++) run(start[0], start[1], ws, start[2]);
  const samples = cases.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    cases.forEach(({ start: [cmd, args, env], fresh }, i) => {
      const cacheHome = fresh ? mkdtempSync(path.join(tmp, 'first-')) : undefined;
      samples[i].push(run(cmd, args, ws, cacheHome ? { ...env, XDG_CACHE_HOME: cacheHome } : env).ms);
      if (cacheHome) rmSync(cacheHome, { recursive: true, force: true });
    });
  }
  results.nodes[version] = cases.map((c, i) => ({ command: c.command, loader: c.loader, ...stats(samples[i]) }));
}
broker.stop();
rmSync(tmp, { recursive: true, force: true });

mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(path.join(ROOT, 'bench/results/startup-node-versions.json'), `${JSON.stringify(results, null, 2)}\n`);
const ms = (v) => v.toFixed(1);
console.log(`${ROUNDS} alternated rounds, ${results.cpus} cores, ${results.at}\n`);
console.log('| Node | command | loader | median ms | min | max |\n|---|---|---|---|---|---|');
for (const [version, rows] of Object.entries(results.nodes))
  for (const r of rows) console.log(`| ${version} | ${r.command} | ${r.loader} | ${ms(r.median)} | ${ms(r.min)} | ${ms(r.max)} |`);
