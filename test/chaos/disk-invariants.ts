import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { type JobRecord, jobRecordSchema } from '../../src/core/registry/job-record.ts';
import type { Workspace } from '../helpers/cli.ts';

/**
 * What must hold on disk whatever killed whom (contract §2): every record parses, validates and
 * names itself; every audit log is whole lines of JSON; and per job, the seqs of its `published`
 * lines are unique and are exactly 1…last_seq of its record. A publish killed after its commit but
 * before the wire still owns its seq: it is on disk, which is all this looks at.
 */

export const registryDirOf = (ws: Workspace): string => path.join(ws.root, '.mam', 'jobs');
export const logDirOf = (ws: Workspace): string => path.join(ws.root, '.mam', 'logs');
export const eventsFileOf = (ws: Workspace, id: string): string => path.join(logDirOf(ws), id, 'events.ndjson');

export interface AuditLine {
  type: string;
  [key: string]: any;
}

/** One job's audit log, parsed; a torn or non-JSON line throws, naming the file. */
export function auditOf(ws: Workspace, id: string): AuditLine[] {
  const file = eventsFileOf(ws, id);
  if (!existsSync(file)) return [];
  return parseAudit(file, readFileSync(file, 'utf8'));
}

function parseAudit(file: string, text: string): AuditLine[] {
  if (text !== '' && !text.endsWith('\n')) throw new Error(`${file}: ends mid-line (torn write)`);
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((line, i) => {
      try {
        const parsed = JSON.parse(line) as AuditLine;
        if (typeof parsed.type !== 'string') throw new Error('no type');
        return parsed;
      } catch {
        throw new Error(`${file}:${i + 1}: torn or unreadable line ${JSON.stringify(line.slice(0, 120))}`);
      }
    });
}

export function recordOf(ws: Workspace, id: string): JobRecord {
  return jobRecordSchema.parse(JSON.parse(readFileSync(path.join(registryDirOf(ws), `${id}.json`), 'utf8')));
}

export interface RegistryCheck {
  records: JobRecord[];
  auditLines: number;
  /** Jobs whose `published` seqs are not exactly 1…last_seq, with what is wrong. */
  seqProblems: string[];
}

/**
 * Checks every record and audit log of a workspace. Throws on a record that does not parse or
 * validate and on a torn audit line; returns the seq findings for the caller to assert on.
 */
export function checkRegistry(ws: Workspace): RegistryCheck {
  const dir = registryDirOf(ws);
  const records: JobRecord[] = [];
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const m = /^([0-9a-f]{8})\.json$/.exec(name);
    if (!m) continue;
    const file = path.join(dir, name);
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(`${file}: record is not JSON (${(err as Error).message})`);
    }
    const parsed = jobRecordSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`${file}: record does not validate: ${parsed.error.issues[0]?.message}`);
    if (parsed.data.job_id !== m[1]) throw new Error(`${file}: names job ${parsed.data.job_id}`);
    records.push(parsed.data);
  }
  let auditLines = 0;
  const logs = logDirOf(ws);
  for (const id of existsSync(logs) ? readdirSync(logs) : []) {
    const file = path.join(logs, id, 'events.ndjson');
    if (existsSync(file)) auditLines += parseAudit(file, readFileSync(file, 'utf8')).length;
  }
  const seqProblems: string[] = [];
  for (const record of records) {
    const problem = seqProblem(record, auditOf(ws, record.job_id));
    if (problem) seqProblems.push(`${record.job_id}: ${problem}`);
  }
  return { records, auditLines, seqProblems };
}

/**
 * Published seqs of a job must be unique and cover 1…last_seq. `published` lines may also stand
 * beyond last_seq: the write-ahead lines of publishers killed before their record took the seq (see
 * Registry.commit). They run on from last_seq + 1, and each but the newest is already marked
 * `publish_failed` (aborted) by the commit that skipped it; the job's next event marks the newest.
 * Undefined when all that holds.
 */
export function seqProblem(record: JobRecord, audit: AuditLine[]): string | undefined {
  const seqs = audit.filter((l) => l.type === 'published' && typeof l.seq === 'number').map((l) => l.seq as number);
  const seen = new Set<number>();
  const dupes = seqs.filter((s) => (seen.has(s) ? true : (seen.add(s), false)));
  if (dupes.length > 0) return `seq ${dupes.join(', ')} published twice (record last_seq ${record.last_seq})`;
  const missing: number[] = [];
  for (let s = 1; s <= record.last_seq; s++) if (!seen.has(s)) missing.push(s);
  const beyond = seqs.filter((s) => s > record.last_seq).sort((a, b) => a - b);
  const marked = new Set(audit.filter((l) => l.type === 'publish_failed' && /^aborted/.test(String(l.reason))).map((l) => l.seq as number));
  const strayBeyond = beyond.filter((s, i) => s !== record.last_seq + 1 + i || (i < beyond.length - 1 && !marked.has(s)));
  if (missing.length > 0 || strayBeyond.length > 0) {
    return `record last_seq ${record.last_seq}, published seqs [${seqs.join(',')}], aborted [${[...marked].join(',')}]: missing [${missing.join(',')}], beyond [${beyond.join(',')}]`;
  }
  for (const s of marked) if (!seen.has(s)) return `seq ${s} marked aborted but never published`;
  return undefined;
}

/** Write-ahead lines of killed publishers: still pending (beyond last_seq, not yet marked) and marked. */
export function abortedCommits(record: JobRecord, audit: AuditLine[]): { pending: number; marked: number } {
  const markedSeqs = new Set(audit.filter((l) => l.type === 'publish_failed' && /^aborted/.test(String(l.reason))).map((l) => l.seq as number));
  const pending = audit.filter((l) => l.type === 'published' && typeof l.seq === 'number' && l.seq > record.last_seq && !markedSeqs.has(l.seq)).length;
  return { pending, marked: markedSeqs.size };
}
