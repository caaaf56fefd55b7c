import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AedesTestBroker, startAedesBroker } from '../helpers/brokers.ts';
import { type Workspace, makeWorkspace } from '../helpers/cli.ts';
import { runBin } from './chaos-kit.ts';
import { auditOf, eventsFileOf, recordOf, registryDirOf } from './disk-invariants.ts';

/**
 * Hostile local files (issue 27, item 5): an audit log whose `published` line holds a seq MAM never
 * took must not become the record's `last_seq` — a record every later command would refuse. The line
 * is reported (one warning naming the file) and skipped; the event takes the record's next seq.
 */

let broker: AedesTestBroker;
const workspaces: Workspace[] = [];

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
  const r = await runBin('mam-register', ['--brief', 'hostile files'], ws);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { job_id: string }).job_id;
}

describe('a corrupt published line in the audit log (issue 27)', () => {
  // As they stand in the line: JSON numbers past 2^53 or not integers, and a seq that is no number.
  const corruptSeqs = ['1e308', '9007199254740992', '9007199254740991', '-1', '0', '1.5', '"7"'];

  it.each(corruptSeqs)('seq %s: reported in one warning, skipped; the record keeps a readable last_seq', async (seqText) => {
    const ws = workspace();
    const id = await registered(ws);
    expect((await runBin('mam-publish', ['--job', id, '--event', 'started'], ws)).code).toBe(0);
    appendFileSync(eventsFileOf(ws, id), `{"type":"published","seq":${seqText},"event":"progress"}\n`);

    const r = await runBin('mam-publish', ['--job', id, '--event', 'progress'], ws);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(`warning: ${eventsFileOf(ws, id)}: a published line is corrupt (seq ${seqText}); skipped, its seq not taken\n`);
    expect(recordOf(ws, id).last_seq).toBe(2);
    const published = auditOf(ws, id).filter((l) => l.type === 'published' && l.payload);
    expect(published.map((l) => l.seq)).toEqual([1, 2]);

    // The job goes on: the record reads back, and the next event follows it.
    expect((await runBin('mam', ['show', '--job', id], ws)).code).toBe(0);
    expect((await runBin('mam-publish', ['--job', id, '--event', 'completed'], ws)).code).toBe(0);
    expect(recordOf(ws, id).last_seq).toBe(3);
  });

  it('a record whose next seq would pass 2^53 is refused before anything is written', async () => {
    const ws = workspace();
    const id = await registered(ws);
    const file = path.join(registryDirOf(ws), `${id}.json`);
    const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...record, last_seq: Number.MAX_SAFE_INTEGER }), { mode: 0o600 });
    const before = readFileSync(file);
    const auditBefore = readFileSync(eventsFileOf(ws, id));

    const r = await runBin('mam-publish', ['--job', id, '--event', 'progress'], ws);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^ERROR: ${file}: not written, the record would be invalid \\(last_seq: .+\\)\\n$`));
    expect(readFileSync(file)).toEqual(before);
    expect(readFileSync(eventsFileOf(ws, id))).toEqual(auditBefore);
  });
});
