import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { type Workspace, makeWorkspace } from '../helpers/cli.ts';
import { runBin } from './chaos-kit.ts';
import { eventsFileOf, recordOf, registryDirOf } from './disk-invariants.ts';

/**
 * Places another local user could write (issue 27, item 3): a registry folder or a `.mam.env` open
 * to others is refused as ssh refuses `~/.ssh` — one line with the fix, exit 64, nothing written —
 * and a symbolic link planted inside the registry or the logs is never written (or read) through.
 */

let broker: AedesTestBroker;
const workspaces: Workspace[] = [];
const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;

beforeAll(async () => {
  broker = await startAedesBroker();
});

afterAll(async () => {
  for (const ws of workspaces) ws.cleanup();
  await broker?.stop();
});

function workspace(): Workspace {
  const ws = makeWorkspace({ MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port) });
  workspaces.push(ws);
  return ws;
}

async function registered(ws: Workspace): Promise<string> {
  const r = await runBin('mam-register', ['--brief', 'hostile places'], ws);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { job_id: string }).job_id;
}

const recordFiles = (ws: Workspace): string[] =>
  existsSync(registryDirOf(ws)) ? readdirSync(registryDirOf(ws)).filter((f) => f.endsWith('.json') && !f.startsWith('.')) : [];

describe('registry folders open to others are refused (exit 64, the fix in the message)', () => {
  it.each([
    ['.mam/jobs', '0777'],
    ['.mam/jobs', '0770'],
    ['.mam/logs', '0757'],
    ['.mam', '0775'],
  ])('%s at mode %s: every command refuses before it reads or writes', async (folder, octal) => {
    const mode = Number.parseInt(octal, 8);
    const ws = workspace();
    const id = await registered(ws);
    const dir = path.join(ws.root, folder);
    chmodSync(dir, mode);
    for (const [bin, args] of [
      ['mam-register', ['--brief', 'x']],
      ['mam-publish', ['--job', id, '--event', 'progress']],
      ['mam', ['show', '--job', id]],
    ] as const) {
      const r = await runBin(bin, [...args], ws);
      expect(r.code, `${bin}: ${r.stderr}`).toBe(64);
      expect(r.stderr).toBe(`ERROR: ${dir}: permissions are too open (mode ${octal}); chmod 700 ${dir}\n`);
    }
    chmodSync(dir, 0o700);
    expect(recordFiles(ws)).toEqual([`${id}.json`]);
    expect(recordOf(ws, id).last_seq).toBe(0);
  });

  it('a custom registry in a world-writable folder without the sticky bit is refused; with it (as /tmp) it is used', async () => {
    const ws = workspace();
    const shared = path.join(ws.root, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const r = await runBin('mam-register', ['--brief', 'x', '--registry', path.join(shared, 'jobs')], ws);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/shared: permissions are too open \(mode 0777\); chmod o-w .*shared \(or chmod \+t\)/);
    chmodSync(shared, 0o1777);
    expect((await runBin('mam-register', ['--brief', 'x', '--registry', path.join(shared, 'jobs')], ws)).code).toBe(0);
  });

  it.runIf(isRoot)('a registry folder owned by another user is refused (chown in the message)', async () => {
    const ws = workspace();
    await registered(ws);
    const dir = registryDirOf(ws);
    chownSync(dir, NOBODY, NOBODY);
    const r = await runBin('mam', ['jobs'], ws);
    expect(r.code).toBe(64);
    expect(r.stderr).toBe(`ERROR: ${dir}: owned by uid ${NOBODY}, not by you (uid 0) or root; chown 0 ${dir}\n`);
  });
});

describe('.mam.env open to others is refused', () => {
  function envFile(ws: Workspace, text: string, mode: number): string {
    const file = path.join(ws.root, '.mam.env');
    writeFileSync(file, text);
    chmodSync(file, mode);
    return file;
  }

  it('writable by others: refused whatever it holds, before anything connects', async () => {
    const ws = workspace();
    const file = envFile(ws, 'MQTT_BROKER=attacker.example\n', 0o666);
    const r = await runBin('mam-register', ['--brief', 'x'], ws);
    expect(r.code).toBe(64);
    expect(r.stderr).toBe(`ERROR: ${file}: permissions are too open (mode 0666); chmod 600 ${file}\n`);
    expect(recordFiles(ws)).toEqual([]);
  });

  it('readable by others while it holds a secret: refused, naming the secret', async () => {
    const ws = workspace();
    const file = envFile(ws, 'MQTT_USERNAME=ada\nMQTT_PASSWORD=hunter2-hunter2\n', 0o644);
    const r = await runBin('mam', ['jobs'], ws);
    expect(r.code).toBe(64);
    expect(r.stderr).toBe(`ERROR: ${file}: permissions are too open (mode 0644); it holds MQTT_PASSWORD: chmod 600 ${file}\n`);
    expect(r.stderr).not.toContain('hunter2');
  });

  it('readable by others with no secret in it (host, topic root): read', async () => {
    const ws = workspace();
    envFile(ws, `MQTT_BROKER=${broker.host}\nMAM_TOPIC_ROOT=acme/jobs\n`, 0o644);
    expect((await runBin('mam-register', ['--brief', 'x'], ws)).code).toBe(0);
  });

  it('at 0600 with secrets: read', async () => {
    const ws = workspace();
    envFile(ws, 'MAM_FLEET_SECRET=fleet-secret-123\nMAM_DISPATCH_SECRET=dispatch-secret-1\n', 0o600);
    expect((await runBin('mam-register', ['--brief', 'x'], ws)).code).toBe(0);
  });

  it.runIf(isRoot)('owned by another user: refused', async () => {
    const ws = workspace();
    const file = envFile(ws, 'MQTT_BROKER=127.0.0.1\n', 0o600);
    chownSync(file, NOBODY, NOBODY);
    const r = await runBin('mam', ['jobs'], ws);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain(`${file}: owned by uid ${NOBODY}`);
  });

  it('a FIFO in its place does not hang: one line, exit 1', async () => {
    const ws = workspace();
    expect(spawnSync('mkfifo', [path.join(ws.root, '.mam.env')]).status).toBe(0);
    const r = await runBin('mam', ['jobs'], ws, {}, 5_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ERROR: ${path.join(ws.root, '.mam.env')}: cannot read (not a regular file)\n`);
  });
});

describe('symbolic links inside the registry and the logs are never followed', () => {
  it('events.ndjson linked to a file outside: the publish is refused and the outside file is untouched', async () => {
    const ws = workspace();
    const id = await registered(ws);
    const outside = path.join(ws.root, 'victim.txt');
    writeFileSync(outside, 'precious\n');
    rmSync(eventsFileOf(ws, id));
    symlinkSync(outside, eventsFileOf(ws, id));
    const r = await runBin('mam-publish', ['--job', id, '--event', 'progress'], ws);
    expect(r.code).toBe(64);
    expect(r.stderr).toBe(`ERROR: ${eventsFileOf(ws, id)}: is a symbolic link; MAM never follows one inside the registry or the logs (remove it)\n`);
    expect(readFileSync(outside, 'utf8')).toBe('precious\n');
    expect(recordOf(ws, id).last_seq).toBe(0);
  });

  it("a job's log folder linked to a folder outside: nothing is written there", async () => {
    const ws = workspace();
    const id = await registered(ws);
    const jobLogs = path.dirname(eventsFileOf(ws, id));
    const outside = path.join(ws.root, 'elsewhere');
    renameSync(jobLogs, outside);
    symlinkSync(outside, jobLogs);
    const before = readFileSync(path.join(outside, 'events.ndjson'), 'utf8');
    const r = await runBin('mam-publish', ['--job', id, '--event', 'progress'], ws);
    expect(r.code).toBe(64);
    expect(r.stderr).toBe(`ERROR: ${jobLogs}: is a symbolic link; MAM never follows one inside the registry or the logs (remove it)\n`);
    expect(readFileSync(path.join(outside, 'events.ndjson'), 'utf8')).toBe(before);
  });

  it('a record linked to a file outside is refused as corrupt and the outside file is not rewritten', async () => {
    const ws = workspace();
    const id = await registered(ws);
    const recordFile = path.join(registryDirOf(ws), `${id}.json`);
    const outside = path.join(ws.root, 'record-copy.json');
    renameSync(recordFile, outside);
    symlinkSync(outside, recordFile);
    const before = readFileSync(outside, 'utf8');
    const r = await runBin('mam-publish', ['--job', id, '--event', 'progress'], ws);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toBe(`ERROR: ${recordFile}: corrupt job record (is a symbolic link; MAM never follows one inside the registry (remove it))\n`);
    expect(readFileSync(outside, 'utf8')).toBe(before);
  });
});
