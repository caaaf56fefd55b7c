import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT } from '../helpers/cli.ts';
import { type TempDir, makeTempDir } from '../helpers/temp-dir.ts';

/**
 * The package as a user gets it: `npm pack`, installed into a fresh project from the tarball. Only
 * the API of package.json `exports` can be imported, its types check, and the bins still run from
 * the installed tree. The install fetches the dependencies from the npm cache or registry: slow.
 */

const INSTALL_TIMEOUT_MS = 300_000;
const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * npm's own `npm_*` variables (set when the tests run under `npm test` or `npx`) would point a
 * nested npm at this checkout: the child gets the environment without them.
 */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key)) env[key] = value;
  return { ...env, ...extra };
}

/** Asynchronous: the embedded broker of one test lives in this process. */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, env: cleanEnv(env), timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

function ok(r: Run, what: string): Run {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}:\n${r.stderr}${r.stdout}`);
  return r;
}

/** `node --input-type=module -e script` in the consumer project; its last stdout line parsed as JSON. */
async function nodeEval(project: string, script: string, env: NodeJS.ProcessEnv = {}): Promise<unknown> {
  const r = ok(await run(process.execPath, ['--input-type=module', '-e', script], project, env), 'node -e');
  return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '');
}

describe('the packed tarball, installed in a fresh project', () => {
  useBrokerCleanup();
  let tmp: TempDir;
  let project: string;
  let packedFiles: string[];

  beforeAll(async () => {
    tmp = makeTempDir('mam-pack-');
    // The global setup has just built dist/ (bins and dist/lib): --ignore-scripts skips `prepare`,
    // which would rebuild the checkout that other suites are reading.
    const packed = ok(await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp.path], REPO_ROOT), 'npm pack');
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    packedFiles = info!.files.map((f) => f.path);
    project = path.join(tmp.path, 'consumer');
    mkdirSync(project);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    const tarball = path.join(tmp.path, info!.filename);
    ok(await run('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], project, {}, INSTALL_TIMEOUT_MS), 'npm install');
  }, INSTALL_TIMEOUT_MS);

  afterAll(() => tmp?.cleanup());

  it('ships the bins, their bundles and the API with its types, and no sources', () => {
    for (const file of [
      'bin/mam.js',
      'bin/load-bundle.cjs',
      'dist/mam.cjs',
      'dist/mam-heartbeat.cjs',
      'dist/mam-turn-holder.cjs',
      'dist/lib/api/index.js',
      'dist/lib/api/index.d.ts',
    ]) {
      expect(packedFiles).toContain(file);
    }
    expect(packedFiles.filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
  });

  it('the API imports by the package name, exports exactly src/api, and reproduces a wire vector', async () => {
    const vector = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'test/fixtures/hmac.json'), 'utf8')) as { vectors: { auth_token: string; wire: string }[] })
      .vectors[0]!;
    const shipped = (await nodeEval(
      project,
      `const api = await import('${pkg.name}');
       const v = JSON.parse(process.env.VECTOR);
       console.log(JSON.stringify({ names: Object.keys(api).sort(), verified: api.verifyPayload(api.parseWireJson(v.wire), v.auth_token),
         forged: api.verifyPayload(api.parseWireJson(v.wire), v.auth_token + 'x') }));`,
      { VECTOR: JSON.stringify(vector) },
    )) as { names: string[]; verified: boolean; forged: boolean };
    const source = await import('../../src/api/index.ts');
    expect(shipped.names).toEqual(Object.keys(source).sort());
    expect(shipped).toMatchObject({ verified: true, forged: false });
  });

  it.each([`${pkg.name}/dist/mam.cjs`, `${pkg.name}/src/core/errors.ts`, `${pkg.name}/dist/lib/core/errors.js`])(
    'a deep import of %s is refused',
    async (specifier) => {
      const r = await run(process.execPath, ['--input-type=module', '-e', `await import('${specifier}')`], project);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
    },
  );

  it('the bins run from the installed tree', async () => {
    // --no: never fetch a package of that name from the registry if the bin were missing; `--`:
    // the flags after it are the bin's, not npx's own (`npx mam --version` prints npm's version).
    const version = ok(await run('npx', ['--no', '--', 'mam', '--version'], project), 'npx mam --version');
    expect(version.stdout.trim()).toBe(pkg.version);
    const ws = path.join(tmp.path, 'ws');
    mkdirSync(path.join(ws, '.git'), { recursive: true });
    // Run where a user's script runs it, outside the project: through npm's .bin link, as a PATH would.
    const bin = path.join(project, 'node_modules/.bin/mam-register');
    const registered = ok(await run(bin, ['--brief', 'packed', '--json'], ws, { MAM_REAL_ROOT: ws }), 'mam-register');
    expect(JSON.parse(registered.stdout)).toMatchObject({ status: 'pending', brief: 'packed' });
  });

  it('register, publish, watch and close run end to end from the installed package, limits from the configuration', async () => {
    let broker: TestBroker | undefined;
    try {
      broker = await startAedesBroker();
      const ws = path.join(tmp.path, 'ws-api');
      mkdirSync(path.join(ws, '.git'), { recursive: true });
      const script = `
        import { close, register, publish, show, watch } from '${pkg.name}';
        const { job_id: jobId } = await register({ brief: 'packed' });
        const events = [];
        let subscribed;
        const ready = new Promise((resolve) => (subscribed = resolve));
        const outcome = watch({ jobIds: [jobId], onEvent: (p) => events.push(p.event), onSubscribed: () => subscribed() });
        await ready;
        await publish({ jobId, event: 'started' });
        await publish({ jobId, event: 'completed', data: { answer: 42 } });
        const { reason } = await outcome;
        const { job_id: other, heartbeat_sec } = await register({ brief: 'to close' });
        const { notice } = await close({ jobId: other, request: 'cancelled' });
        const { status } = await show({ jobId: other });
        let refused;
        await close({ jobId, request: 'error' }).catch((err) => (refused = err.name));
        console.log(JSON.stringify({ reason, events, heartbeat_sec, closed: { status, notice: notice?.message ?? null }, refused }));`;
      const result = await nodeEval(project, script, { MAM_REAL_ROOT: ws, MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port), MAM_HEARTBEAT_SEC: '9' });
      expect(result).toEqual({
        reason: 'all_completed',
        events: ['started', 'completed'],
        heartbeat_sec: 9,
        closed: { status: 'cancelled', notice: null },
        refused: 'TransitionRefused',
      });
    } finally {
      await broker?.stop();
    }
  });

  it('a TypeScript program type-checks against the shipped types (nodenext, strict)', async () => {
    writeFileSync(
      path.join(project, 'check.ts'),
      `import { NotDelivered, type CloseResult, type EventPayload, type PublicJobRecord, type WatchOutcome, close, parseWireJson, publish, register, verifyPayload, watch } from '${pkg.name}';
import * as api from '${pkg.name}';
const registered: Promise<PublicJobRecord> = register({ brief: 'typed' });
void registered.then((r) => r.heartbeat_sec.toFixed());
// @ts-expect-error a record as returned holds no token
void registered.then((r) => r.auth_token.length);
const closed: Promise<CloseResult> = close({ jobId: 'ab000001', request: 'cancelled' });
// @ts-expect-error not a close request
void close({ jobId: 'ab000001', request: 'failed' });
// @ts-expect-error the registry is not part of the API
void api.Registry;
const sent: Promise<EventPayload> = publish({ jobId: 'ab000001', event: 'completed', data: { n: 1 } });
// @ts-expect-error not a lifecycle event: the shipped types are real, not any
void publish({ jobId: 'ab000001', event: 'finished' });
const outcome: Promise<WatchOutcome> = watch({ jobIds: ['ab000001'], onEvent: (p) => console.log(p.seq, p.data.attempt_id) });
// @ts-expect-error jobIds and all are exclusive
void watch({ all: true, jobIds: ['ab000001'], onEvent: () => undefined });
const valid: boolean = verifyPayload(parseWireJson('{}'), 'key');
export const used = [sent, outcome, valid, closed, NotDelivered];
`,
    );
    const tsc = path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
    const r = await run(process.execPath, [tsc, '--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--strict', 'check.ts'], project);
    expect(r.stdout + r.stderr).toBe('');
    expect(r.code).toBe(0);
  }, 120_000);
});
