// The last step of `npm test`: the suites that start the built bins run again under Node 22 and 24,
// which users run, while these machines (and so the main vitest run) have Node 20. vitest runs
// under that Node, with its folder first on PATH, so that everything a test starts uses it too: the
// bins (spawned with process.execPath), the heartbeat timer, and agents' `#!/usr/bin/env node`.
//
// `node scripts/test-node-versions.mjs [suite folders…]` (default: the CLI, broker and delegation
// suites, about a minute each on 2 cores). A Node that cannot be found is skipped with a loud
// SKIPPED: line, and with CI=true a skip is a failure, as for the broker suites
// (test/helpers/server-process.ts).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const MAJORS = [22, 24];
const SUITES = ['test/cli', 'test/brokers', 'test/delegate'];

/**
 * The Node binary of a major version: `MAM_NODE_<major>`, else the one .ci/run installs under
 * `${XDG_CACHE_HOME:-$HOME/.cache}/mam-ci/node-<major>`. Returns `{ node, version }`, or
 * `{ missing }` (why it is not there) or `{ wrong }` (a binary of another version).
 */
export function findNode(major, env = process.env) {
  const cache = env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  const fromEnv = env[`MAM_NODE_${major}`];
  const node = fromEnv || path.join(cache, 'mam-ci', `node-${major}`, 'node_modules', '.bin', 'node');
  const where = fromEnv ? `MAM_NODE_${major}=${fromEnv}` : node;
  if (!existsSync(node)) return { missing: `no Node ${major} at ${where} (bash .ci/run installs it there, or set MAM_NODE_${major})` };
  const r = spawnSync(node, ['--version'], { encoding: 'utf8' });
  const version = r.stdout?.trim() ?? '';
  if (!version.startsWith(`v${major}.`)) return { wrong: `${where} is ${version || 'not a working node'}, not Node ${major}` };
  return { node, version };
}

function main() {
  const suites = process.argv.length > 2 ? process.argv.slice(2) : SUITES;
  const ci = process.env.CI === 'true';
  const results = [];
  for (const major of MAJORS) {
    const found = findNode(major);
    if (found.missing) {
      process.stderr.write(`SKIPPED: Node ${major} suites — ${found.missing}${ci ? '; CI=true forbids skipping them' : ''}\n`);
      results.push({ major, ok: !ci, line: `Node ${major}: skipped${ci ? ', a failure with CI=true' : ''}` });
      continue;
    }
    if (found.wrong) {
      process.stderr.write(`ERROR: ${found.wrong}\n`);
      results.push({ major, ok: false, line: `Node ${major}: ${found.wrong}` });
      continue;
    }
    console.log(`\nNode ${found.version}: vitest run ${suites.join(' ')}`);
    const started = performance.now();
    const r = spawnSync(found.node, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', ...suites], {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, PATH: `${path.dirname(found.node)}${path.delimiter}${process.env.PATH ?? ''}` },
    });
    const seconds = Math.round((performance.now() - started) / 1000);
    const ok = r.status === 0;
    results.push({
      major,
      ok,
      line: `Node ${found.version}: ${ok ? 'passed' : `failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`})`} in ${seconds} s`,
    });
  }
  console.log(`\n${results.map((r) => r.line).join('\n')}`);
  process.exitCode = results.every((r) => r.ok) ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) main();
