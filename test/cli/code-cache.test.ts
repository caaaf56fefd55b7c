import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Workspace, makeWorkspace, runBin } from '../helpers/cli.ts';

// bin/load-bundle.cjs: the V8 code cache every bin starts with. It may only ever save time: whatever
// state the cache folder is in, the command does what it would do without it.

let ws: Workspace;
afterEach(() => ws?.cleanup());

const cacheDir = (w: Workspace) => path.join(w.root, 'xdg-cache', 'mam', 'v8');
const caches = (w: Workspace) => (existsSync(cacheDir(w)) ? readdirSync(cacheDir(w)).filter((f) => f.startsWith('mam-register.')) : []);

function register(w: Workspace, env: NodeJS.ProcessEnv = {}) {
  const r = runBin('mam-register', ['--brief', 'code cache'], w, { env: { XDG_CACHE_HOME: path.join(w.root, 'xdg-cache'), ...env } });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ status: 'pending' });
}

describe('the code cache of the bins', () => {
  it('is written by the first run, private (0600 in a 0700 folder), and used as is by the next', () => {
    ws = makeWorkspace();
    register(ws);
    const [file] = caches(ws);
    expect(file).toMatch(/^mam-register\.\d+\.[0-9a-f]{16}\.v8cache$/);
    const full = path.join(cacheDir(ws), file!);
    expect(statSync(full).mode & 0o777).toBe(0o600);
    expect(statSync(cacheDir(ws)).mode & 0o777).toBe(0o700);
    const before = statSync(full).mtimeMs;
    register(ws);
    expect(caches(ws)).toEqual([file]);
    expect(statSync(full).mtimeMs).toBe(before); // accepted by V8, so not rewritten
  });

  it('a corrupt cache is rejected by V8 and replaced; the command is unaffected', () => {
    ws = makeWorkspace();
    register(ws);
    const full = path.join(cacheDir(ws), caches(ws)[0]!);
    writeFileSync(full, Buffer.alloc(4096, 0x5a));
    register(ws);
    expect(readFileSync(full).equals(Buffer.alloc(4096, 0x5a))).toBe(false);
    register(ws);
  });

  it("drops this bin's caches of other builds and temp files, and leaves other bins' alone", () => {
    ws = makeWorkspace();
    mkdirSync(cacheDir(ws), { recursive: true, mode: 0o700 });
    writeFileSync(path.join(cacheDir(ws), 'mam-register.1.0123456789abcdef.v8cache'), 'old build');
    writeFileSync(path.join(cacheDir(ws), 'mam-register.1.0123456789abcdef.v8cache.4242.tmp'), 'a killed writer');
    writeFileSync(path.join(cacheDir(ws), 'mam-pick.1.0123456789abcdef.v8cache'), 'another bin');
    register(ws);
    expect(caches(ws)).toHaveLength(1);
    expect(caches(ws)[0]).not.toContain('0123456789abcdef');
    expect(existsSync(path.join(cacheDir(ws), 'mam-pick.1.0123456789abcdef.v8cache'))).toBe(true);
  });

  it('never reads nor writes a folder that others can write', () => {
    ws = makeWorkspace();
    mkdirSync(cacheDir(ws), { recursive: true });
    chmodSync(cacheDir(ws), 0o777);
    register(ws);
    expect(caches(ws)).toEqual([]);
  });

  it('is made only by a run that did the work: not by --help, not by a usage error', () => {
    ws = makeWorkspace();
    const env = { XDG_CACHE_HOME: path.join(ws.root, 'xdg-cache') };
    expect(runBin('mam-register', ['--help'], ws, { env }).code).toBe(0);
    expect(runBin('mam-register', ['--heartbeat', 'soon'], ws, { env }).code).toBe(64);
    expect(caches(ws)).toEqual([]);
    register(ws);
    expect(caches(ws)).toHaveLength(1);
  });

  it('MAM_CODE_CACHE=0 turns it off', () => {
    ws = makeWorkspace();
    register(ws, { MAM_CODE_CACHE: '0' });
    expect(existsSync(path.join(ws.root, 'xdg-cache', 'mam'))).toBe(false);
  });

  it('an unwritable cache home costs nothing but the cache', () => {
    ws = makeWorkspace();
    writeFileSync(path.join(ws.root, 'xdg-cache'), 'a file, not a folder');
    register(ws);
  });
});
