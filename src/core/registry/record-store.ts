import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { CorruptRecord, MamError, NoSuchJob } from '../errors.ts';
import { type JobRecord, checkRecordFast, jobRecordSchema } from './job-record.ts';
import { jobIdOfRecordFile } from './paths.ts';

/** Files and folders hold tokens: owner only. */
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

export function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
}

/** Temp file in the same folder, fsync, rename: a reader or a crash sees the old or the new file. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  ensureDir(path.dirname(file));
  await writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`, { mode: FILE_MODE, fsync: true });
}

/**
 * Reads and validates one record. A file that does not parse or validate is named in the error
 * and left exactly as it is.
 */
export function readRecord(file: string, jobId: string): JobRecord {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new NoSuchJob(jobId);
    throw new CorruptRecord(file, `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new CorruptRecord(file, `not JSON: ${(err as Error).message}`);
  }
  const record = validRecord(raw);
  if (typeof record === 'string') throw new CorruptRecord(file, record);
  if (record.job_id !== jobId) throw new CorruptRecord(file, `job_id ${record.job_id} does not match the file name`);
  return record;
}

/** The record `raw` holds, or why it is none (the first issue, as `field: message`). */
function validRecord(raw: unknown): JobRecord | string {
  const record = checkRecordFast(raw);
  if (record) return record;
  const parsed = jobRecordSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  return `${issue.path.join('.') || 'record'}: ${issue.message}`;
}

/**
 * Throws, naming the file, when `record` is one that `readRecord` would refuse: what is written must
 * read back, or a bad value (a seq past 2^53) would turn a working job into a corrupt record.
 */
export function assertWritableRecord(file: string, record: JobRecord): void {
  const valid = validRecord(record);
  if (typeof valid === 'string') throw new MamError(`${file}: not written, the record would be invalid (${valid})`);
}

export async function writeRecord(file: string, record: JobRecord): Promise<void> {
  assertWritableRecord(file, record);
  await writeJsonAtomic(file, record);
}

/** Job ids of every record file in the folder, unordered. */
export function listRecordIds(registryDir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(registryDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const ids: string[] = [];
  for (const name of names) {
    const id = jobIdOfRecordFile(name);
    if (id !== undefined) ids.push(id);
  }
  return ids;
}
