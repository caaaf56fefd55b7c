import { closeSync, constants, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { CorruptRecord, MamError, NoSuchJob } from '../errors.ts';
import { type JobRecord, checkRecordFast, jobRecordSchema } from './job-record.ts';
import { jobIdOfRecordFile } from './paths.ts';
import { NO_FOLLOW, isSymlinkRefusal, refuseSymlink, symlinkRefused } from '../private-places.ts';

/** Files and folders hold tokens: owner only. */
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

export function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
}

/** A folder MAM makes inside the logs (`logs/<job id>`): made if missing, never a symbolic link. */
export function ensureOwnDir(dir: string): void {
  ensureDir(dir);
  if (lstatSync(dir).isSymbolicLink()) throw symlinkRefused(dir);
}

/**
 * Appends one line with one `write(2)` and O_APPEND (concurrent writers interleave whole lines;
 * a kill leaves no torn line on a local disk), and never through a symbolic link.
 */
export function appendLine(file: string, line: string): void {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | NO_FOLLOW, FILE_MODE);
  } catch (err) {
    throw isSymlinkRefusal(err) ? symlinkRefused(file) : err;
  }
  try {
    writeFileSync(fd, line);
  } finally {
    closeSync(fd);
  }
}

/** write-file-atomic's sync form for files of the registry and logs, refusing a symbolic link. */
export function writePrivateFileSync(file: string, content: string): void {
  refuseSymlink(file);
  writeFileAtomic.sync(file, content, { mode: FILE_MODE });
}

/** Temp file in the same folder, fsync, rename: a reader or a crash sees the old or the new file. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  ensureDir(path.dirname(file));
  // write-file-atomic resolves a symbolic link and writes its target: one planted here is refused.
  refuseSymlink(file);
  await writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`, { mode: FILE_MODE, fsync: true });
}

/**
 * A JSON file of the registry (a job's or a session's record), parsed but not yet validated. Never
 * read through a symbolic link; a file that cannot be read or parsed is a CorruptRecord naming it,
 * left exactly as it is; `missing` is the error for one that is not there.
 */
export function readRegistryJson(file: string, missing: () => Error): unknown {
  let text: string;
  try {
    const fd = openSync(file, constants.O_RDONLY | NO_FOLLOW);
    try {
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw missing();
    if (isSymlinkRefusal(err)) throw new CorruptRecord(file, 'is a symbolic link; MAM never follows one inside the registry (remove it)');
    throw new CorruptRecord(file, `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CorruptRecord(file, `not JSON: ${(err as Error).message}`);
  }
}

/**
 * Reads and validates one record. A file that does not parse or validate is named in the error
 * and left exactly as it is.
 */
export function readRecord(file: string, jobId: string): JobRecord {
  const record = validRecord(readRegistryJson(file, () => new NoSuchJob(jobId)));
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
