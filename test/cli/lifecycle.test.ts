import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunResult, type Workspace, makeWorkspace } from '../helpers/cli.ts';
import { runInProcess } from '../helpers/in-process.ts';

// The commands as a script sees them (argv → stdout, stderr, exit code), run in this process
// through the same code as their bins (test/helpers/in-process.ts); test/cli/bins.test.ts starts
// the bins themselves.

let ws: Workspace;
beforeEach(() => {
  // Port 1 refuses at once: mam-close's best-effort broadcast fails fast, and no test reaches a real broker.
  ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: '1' });
});
afterEach(() => ws.cleanup());

const A = 'aaaaaaaa';
const B = 'bbbbbbbb';
const C = 'cccccccc';
const recordFile = (id: string) => path.join(ws.root, '.mam', 'jobs', `${id}.json`);

/**
 * Success as a script sees it: exit 0, one JSON object on one line, no token; nothing on stderr
 * but, where allowed, warnings (mam-close when the broker is down).
 */
function okRecord(r: RunResult, opts: { warnings?: boolean } = {}): Record<string, unknown> {
  if (opts.warnings) expect(r.stderr).toMatch(/^(warning: [^\n]+\n)*$/);
  else expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^\{.*\}\n$/);
  expect(r.stdout).not.toContain('auth_token');
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** Failure as a script sees it: the exit code, empty stdout, exactly one "ERROR: " line, no stack. */
function failed(r: RunResult, code: number): string {
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/^ERROR: [^\n]+\n$/);
  expect(r.stderr).not.toMatch(/\n\s+at /);
  expect(r.code).toBe(code);
  return r.stderr;
}

const register = async (...args: string[]) => okRecord(await runInProcess('mam-register', args, ws));

describe('mam-register', () => {
  it('prints the pending record as one JSON object, without auth_token', async () => {
    const rec = await register('--job-id', A, '--brief', 'fix the bug', '--heartbeat', '10', '--heartbeat-misses', '3');
    expect(rec).toMatchObject({
      job_id: A,
      status: 'pending',
      brief: 'fix the bug',
      heartbeat_sec: 10,
      heartbeat_misses: 3,
      idle_timeout_sec: 30,
      ack_timeout_sec: 180,
      timeout_sec: 3600,
      transport: 'herdr',
      attempt_id: 1,
      last_seq: 0,
      depends_on: [],
    });
    // The token is on disk, for the publisher, and only there.
    expect(JSON.parse(readFileSync(recordFile(A), 'utf8')).auth_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('mam register … ≡ mam-register …', async () => {
    const args = ['--brief', 'same', '--agent-session', 'S', '--timeout', '60', '--ack-timeout', '5', '--idle-timeout', '7', '--transport', 'remote'];
    const direct = await register('--job-id', A, ...args);
    const umbrella = okRecord(await runInProcess('mam', ['register', '--job-id', B, ...args], ws));
    const strip = ({ job_id: _j, created_at: _c, updated_at: _u, dispatch_token: _d, ...rest }: Record<string, unknown>) => rest;
    expect(strip(umbrella)).toEqual(strip(direct));
    expect(umbrella.job_id).toBe(B);
  });

  it('--brief-file reads a file, or stdin with -', async () => {
    const file = path.join(ws.root, 'brief.md');
    writeFileSync(file, '# Task\nline two\n');
    expect((await register('--brief-file', file)).brief).toBe('# Task\nline two\n');
    expect(okRecord(await runInProcess('mam-register', ['--brief-file', '-'], ws, { input: 'from stdin\n' })).brief).toBe('from stdin\n');
    failed(await runInProcess('mam-register', ['--brief-file', path.join(ws.root, 'missing.md')], ws), 64);
    failed(await runInProcess('mam-register', ['--brief', 'x', '--brief-file', file], ws), 64);
  });

  it('--brief-file refuses what is not a regular file, or too large, at once and writing nothing', async () => {
    const fifo = path.join(ws.root, 'brief.fifo');
    execFileSync('mkfifo', [fifo]);
    const huge = path.join(ws.root, 'huge.md');
    writeFileSync(huge, 'x'.repeat(1024 * 1024 + 1));
    // A FIFO with no writer would block a plain read for ever (a hang fails the test by its timeout).
    expect(failed(await runInProcess('mam-register', ['--brief-file', fifo], ws), 64)).toContain('not a regular file');
    expect(failed(await runInProcess('mam-register', ['--brief-file', '/dev/zero'], ws), 64)).toContain('not a regular file');
    expect(failed(await runInProcess('mam-register', ['--brief-file', ws.root], ws), 64)).toContain('not a regular file');
    expect(failed(await runInProcess('mam-register', ['--brief-file', huge], ws), 64)).toContain('larger than 1048576 bytes');
    expect(existsSync(path.join(ws.root, '.mam', 'jobs')) ? readdirSync(path.join(ws.root, '.mam', 'jobs')).filter((f) => f.endsWith('.json')) : []).toEqual(
      [],
    );
  });

  it('--depends-on is repeatable; a missing dependency is exit 66', async () => {
    await register('--job-id', A);
    await register('--job-id', B);
    expect((await register('--job-id', C, '--depends-on', A, '--depends-on', B)).depends_on).toEqual([A, B]);
    expect(failed(await runInProcess('mam-register', ['--depends-on', 'dddddddd'], ws), 66)).toContain('dddddddd');
  });

  it('a duplicate --job-id is refused with exit 1', async () => {
    await register('--job-id', A);
    const before = readFileSync(recordFile(A));
    expect(failed(await runInProcess('mam-register', ['--job-id', A], ws), 1)).toContain(A);
    expect(readFileSync(recordFile(A))).toEqual(before);
  });

  it.each([
    [['--bogus'], /unknown option/],
    [['--job-id', 'XYZ'], /--job-id/],
    [['--job-id', 'AAAAAAAA'], /--job-id/],
    [['--heartbeat', 'abc'], /--heartbeat/],
    [['--heartbeat-misses', '0'], /--heartbeat-misses/],
    [['--transport', 'carrier-pigeon'], /--transport/],
    [['--depends-on', 'nope'], /--depends-on/],
    [['extra-argument'], /argument/],
  ])('usage error %j: exit 64, one line', async (args, message) => {
    expect(failed(await runInProcess('mam-register', args, ws), 64)).toMatch(message);
  });
});

describe('mam-pick, mam-close, mam show, mam redispatch', () => {
  it('pick claims the job (exit 0), then exit 4 with an empty stdout', async () => {
    await register('--job-id', A);
    expect(okRecord(await runInProcess('mam-pick', ['--agent-session', 'S1'], ws))).toMatchObject({ job_id: A, status: 'running', agent_session: 'S1' });
    expect(failed(await runInProcess('mam-pick', ['--agent-session', 'S1'], ws), 4)).toContain('nothing pickable');
    failed(await runInProcess('mam-pick', [], ws), 64);
  });

  it('close: exit 0 with the record, 5 on a terminal job, 66 for an unknown job, 64 for a bad request', async () => {
    await register('--job-id', A);
    expect(okRecord(await runInProcess('mam-close', ['--job', A, '--request', 'deadline_timeout'], ws), { warnings: true })).toMatchObject({
      status: 'error',
      detail: 'deadline_timeout',
    });
    const before = readFileSync(recordFile(A));
    expect(failed(await runInProcess('mam-close', ['--job', A, '--request', 'cancelled'], ws), 5)).toContain('refused');
    expect(readFileSync(recordFile(A))).toEqual(before);
    expect(failed(await runInProcess('mam-close', ['--job', B, '--request', 'cancelled'], ws), 66)).toContain(B);
    failed(await runInProcess('mam-close', ['--job', A, '--request', 'finished'], ws), 64);
    failed(await runInProcess('mam', ['close', '--job', 'XYZ', '--request', 'cancelled'], ws), 64);
  });

  it('show prints the record; 66 for an unknown job; redispatch makes it pending again', async () => {
    await register('--job-id', A, '--brief', 'b');
    await runInProcess('mam-close', ['--job', A, '--request', 'error'], ws);
    expect(okRecord(await runInProcess('mam', ['show', '--job', A], ws))).toMatchObject({ job_id: A, status: 'error' });
    failed(await runInProcess('mam', ['show', '--job', B], ws), 66);
    failed(await runInProcess('mam', ['show', '--job', 'XYZ'], ws), 64);
    expect(okRecord(await runInProcess('mam', ['redispatch', '--job', A], ws))).toMatchObject({ status: 'pending', attempt_id: 2 });
    expect(okRecord(await runInProcess('mam-pick', ['--agent-session', 'S'], ws))).toMatchObject({ job_id: A, attempt_id: 2 });
  });

  it('show of a corrupt record: exit 1 naming the file, which is left unchanged', async () => {
    await register('--job-id', A);
    writeFileSync(recordFile(A), '{"job_id": "aaaaaaaa", "status": ');
    const before = readFileSync(recordFile(A));
    expect(failed(await runInProcess('mam', ['show', '--job', A], ws), 1)).toContain(recordFile(A));
    failed(await runInProcess('mam-close', ['--job', A, '--request', 'cancelled'], ws), 1);
    expect(readFileSync(recordFile(A))).toEqual(before);
  });

  it('--registry DIR points a command at another registry', async () => {
    const other = path.join(ws.root, 'elsewhere');
    okRecord(await runInProcess('mam-register', ['--job-id', A, '--registry', other], ws));
    failed(await runInProcess('mam-pick', ['--agent-session', 'S'], ws), 4);
    expect(okRecord(await runInProcess('mam-pick', ['--agent-session', 'S', '--registry', other], ws)).job_id).toBe(A);
  });
});

describe('mam jobs', () => {
  it('--json is an array of records without tokens; the table has a header and a row per job', async () => {
    await register('--job-id', A, '--brief', 'first line\nsecond line');
    await register('--job-id', B);
    await runInProcess('mam-pick', ['--agent-session', 'S9'], ws);
    const r = await runInProcess('mam', ['jobs', '--json'], ws);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('auth_token');
    const list = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(list.map((j) => [j.job_id, j.status])).toEqual([
      [A, 'running'],
      [B, 'pending'],
    ]);
    const table = await runInProcess('mam', ['jobs'], ws);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^JOB\s+STATUS\s+SESSION\s+ATTEMPT\s+SEQ\s+UPDATED\s+BRIEF$/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(new RegExp(`^${A}\\s+running\\s+S9\\s+1\\s+0\\s+\\S+ ago\\s+first line$`));
    expect(lines[2]).toMatch(new RegExp(`^${B}\\s+pending\\s+-\\s+1\\s+0\\s+`));
    const filtered = JSON.parse((await runInProcess('mam', ['jobs', '--json', '--status', 'pending'], ws)).stdout) as Array<{ job_id: string }>;
    expect(filtered.map((j) => j.job_id)).toEqual([B]);
  });

  it('an empty registry: --json prints [], the table prints nothing on stdout', async () => {
    expect(await runInProcess('mam', ['jobs', '--json'], ws)).toMatchObject({ code: 0, stdout: '[]\n' });
    expect(await runInProcess('mam', ['jobs'], ws)).toMatchObject({ code: 0, stdout: '' });
  });

  it('a corrupt record is reported on stderr and the others still listed', async () => {
    await register('--job-id', A);
    writeFileSync(recordFile(B), 'garbage');
    const r = await runInProcess('mam', ['jobs', '--json'], ws);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as Array<{ job_id: string }>).map((j) => j.job_id)).toEqual([A]);
    expect(r.stderr).toContain(recordFile(B));
  });
});
