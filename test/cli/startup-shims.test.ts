import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { type Workspace, runBinAsync } from '../helpers/cli.ts';
import { auditOf, brokerWorkspace, publishOk, register } from '../publisher/publish-fixtures.ts';

// scripts/build.mjs serves a few built-ins and dependencies of the bundles with stand-ins
// (scripts/shims/), so that a publish does not load what it never uses. These hold that the
// stand-ins keep out what they are for, and that what they stand for still works.

// Built-ins that a publish loaded at start before the stand-ins, and never needs.
const KEPT_OUT = ['worker_threads', 'child_process', 'assert', 'internal/fs/streams', 'internal/fs/promises'];

let broker: AedesTestBroker;
beforeAll(async () => {
  broker = await startAedesBroker();
});
afterAll(() => broker?.stop());

/** A workspace on the test's broker (cleaned up after the test) with a preload that lists built-ins. */
function workspaceListingBuiltins(): Workspace {
  const ws = brokerWorkspace(broker.port);
  // Writes the built-ins the process loaded, as Node lists them, when it exits.
  writeFileSync(
    path.join(ws.root, 'list-builtins.cjs'),
    `process.on('exit', () => require('node:fs').writeFileSync(process.env.MAM_TEST_BUILTINS, process.moduleLoadList.join('\\n')));\n`,
  );
  return ws;
}

/** Runs `mam-publish args…` (it must exit 0) and returns the built-in modules it loaded. */
async function publishListingBuiltins(ws: Workspace, args: string[]): Promise<string[]> {
  const out = path.join(ws.root, `builtins-${args.join('-')}.txt`);
  const env = { NODE_OPTIONS: `--require ${path.join(ws.root, 'list-builtins.cjs')}`, MAM_TEST_BUILTINS: out };
  const r = await runBinAsync('mam-publish', args, ws, { env });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const loaded = readFileSync(out, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('NativeModule '))
    .map((l) => l.slice('NativeModule '.length));
  // A hook that listed nothing would pass every "not loaded" below.
  expect(loaded).toContain('net');
  return loaded;
}

describe('the start-up stand-ins of the bundles', () => {
  it('keep worker_threads, child_process, assert and the fs streams out of a publish', async () => {
    const ws = workspaceListingBuiltins();
    await register(ws, 'a1b2c3d4');
    const loaded = await publishListingBuiltins(ws, ['--job', 'a1b2c3d4', '--event', 'progress']);
    for (const name of KEPT_OUT) expect(loaded, name).not.toContain(name);
  });

  it('load child_process on first use: a started event with --heartbeat spawns the timer', async () => {
    const ws = workspaceListingBuiltins();
    await register(ws, 'b2c3d4e5', '--heartbeat', '1');
    const args = ['--job', 'b2c3d4e5', '--event', 'started', '--heartbeat', '1', '--watch-pid', String(process.pid)];
    const loaded = await publishListingBuiltins(ws, args);
    expect(loaded).toContain('child_process');
    // The timer it spawned beats: heartbeats reach the audit log, then the terminal event stops it.
    await expect
      .poll(() => auditOf(ws, 'b2c3d4e5').filter((l) => l.type === 'published' && (l.payload as { detail?: string }).detail === 'heartbeat').length, {
        timeout: 10_000,
      })
      .toBeGreaterThan(0);
    await publishOk(ws, 'b2c3d4e5', 'completed');
  });
});
