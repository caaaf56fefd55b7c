import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { type JobRecord, publicView } from './job-record.ts';
import type { RegistryPaths } from './paths.ts';
import { NO_FOLLOW, isSymlinkRefusal, symlinkRefused } from '../private-places.ts';
import { appendLine, ensureOwnDir, writeJsonAtomic } from './record-store.ts';

/** The `type`s of `events.ndjson` lines (contract §2). */
export type AuditType =
  | 'registered'
  | 'status_changed'
  | 'published'
  | 'publish_failed'
  | 'rejected'
  | 'duplicate'
  | 'ignored_after_terminal'
  | 'seq_gap'
  | 'stale_timestamp'
  | 'refused'
  | 'reconnected'
  | 'redispatched'
  // Permission answers (src/core/control/, docs/permissions.md).
  | 'decision_sent'
  | 'decision_received'
  | 'decision_defaulted';

/** How much of `events.ndjson` is read per step when looking for the last `published` line from the end. */
const TAIL_CHUNK = 64 * 1024;
const PUBLISHED_LINE = Buffer.from('{"type":"published"');
const NEWLINE = 0x0a;

export interface AuditEntry {
  type: AuditType;
  [key: string]: unknown;
}

/**
 * A value already written as JSON text (a payload as it went on the wire), embedded in the line
 * as it stands: re-encoding it would lose its lexemes (`1.0` → `1`, big integers' digits), and a
 * payload MAM prints back from the audit must still verify.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * The per-job audit folder: `meta.json` (the job as registered, without its token), `status.json`
 * and the append-only `events.ndjson`.
 */
export class AuditLog {
  constructor(private readonly paths: RegistryPaths) {}

  /**
   * One `write(2)` of one whole line with O_APPEND: concurrent writers interleave whole lines,
   * and a process killed mid-call leaves no torn line on a local disk.
   */
  append(jobId: string, entry: AuditEntry): void {
    ensureOwnDir(this.paths.jobLogDir(jobId));
    appendLine(this.paths.events(jobId), `${auditLine({ ...entry, at: new Date().toISOString(), job_id: jobId })}\n`);
  }

  /**
   * The seq of the job's last `published` line, 0 when there is none. Lines are appended under the
   * registry lock, so the last one holds the highest seq; the file is read backwards from its end,
   * usually one chunk. A `published` line whose seq is no seq MAM could have taken (see
   * `isTakenSeq`) is corrupt or forged: it is passed to `onCorrupt` and skipped, so that it never
   * becomes the record's `last_seq` (a record that every later read would refuse).
   */
  lastPublishedSeq(jobId: string, onCorrupt: (seqText: string) => void = () => undefined): number {
    let fd: number;
    try {
      fd = openSync(this.paths.events(jobId), constants.O_RDONLY | NO_FOLLOW);
    } catch (err) {
      // A link here would let whoever planted it choose the next seq.
      if (isSymlinkRefusal(err)) throw symlinkRefused(this.paths.events(jobId));
      return 0;
    }
    try {
      let pos = fstatSync(fd).size;
      // Bytes after the last newline seen so far that belong to a line starting in an earlier chunk.
      let carry = Buffer.alloc(0);
      while (pos > 0) {
        const start = Math.max(0, pos - TAIL_CHUNK);
        const chunk = Buffer.alloc(pos - start);
        readSync(fd, chunk, 0, chunk.length, start);
        pos = start;
        const buf = Buffer.concat([chunk, carry]);
        let end = buf.length;
        for (let i = buf.length - 1; i >= -1; i--) {
          if (i >= 0 && buf[i] !== NEWLINE) continue;
          if (i < 0 && pos > 0) break; // the line goes on in the previous chunk
          const seq = publishedSeq(buf.subarray(i + 1, end));
          if (typeof seq === 'number') return seq;
          if (seq !== undefined) onCorrupt(seq.corrupt);
          end = i;
        }
        carry = buf.subarray(0, end);
      }
      return 0;
    } finally {
      closeSync(fd);
    }
  }

  async writeMeta(record: JobRecord): Promise<void> {
    ensureOwnDir(this.paths.jobLogDir(record.job_id));
    await writeJsonAtomic(this.paths.meta(record.job_id), publicView(record));
  }

  async writeStatus(record: JobRecord): Promise<void> {
    ensureOwnDir(this.paths.jobLogDir(record.job_id));
    await writeJsonAtomic(this.paths.status(record.job_id), {
      status: record.status,
      updated_at: record.updated_at,
      last_seq: record.last_seq,
    });
  }
}

/** One JSON line; `JsonText` members go in as they stand, after the others (`type` stays first). */
function auditLine(entry: Record<string, unknown>): string {
  const plain: Record<string, unknown> = {};
  const embedded: string[] = [];
  for (const [key, value] of Object.entries(entry)) {
    if (value instanceof JsonText) embedded.push(`,${JSON.stringify(key)}:${value.text}`);
    else plain[key] = value;
  }
  const text = JSON.stringify(plain);
  return embedded.length === 0 ? text : `${text.slice(0, -1)}${embedded.join('')}}`;
}

/**
 * A seq MAM may have taken: a safe integer ≥ 1 whose successor is safe too. The publisher writes only
 * `last_seq + 1` of a validated record, so anything else (1e308, 2^53, -1, 1.5, a string) did not
 * come from it, and a next seq derived from it would not be a safe integer.
 */
export function isTakenSeq(seq: unknown): seq is number {
  return Number.isSafeInteger(seq) && (seq as number) >= 1 && (seq as number) < Number.MAX_SAFE_INTEGER;
}

/** A `published` line's seq; `corrupt` (what is wrong with it) when the line is one but holds no seq MAM took. */
function publishedSeq(line: Buffer): number | { corrupt: string } | undefined {
  if (line.length < PUBLISHED_LINE.length || !line.subarray(0, PUBLISHED_LINE.length).equals(PUBLISHED_LINE)) return undefined;
  let seq: unknown;
  try {
    seq = (JSON.parse(line.toString('utf8')) as { seq?: unknown }).seq;
  } catch {
    return { corrupt: 'not JSON' };
  }
  if (isTakenSeq(seq)) return seq;
  // Named as it stands in the line (`1e308`, not JSON.stringify's `1e+308`), so that grep finds it.
  const lexeme = /"seq":\s*([^,}\s]{1,40})/.exec(line.toString('utf8'))?.[1];
  return { corrupt: lexeme === undefined ? 'no seq' : `seq ${lexeme}` };
}
