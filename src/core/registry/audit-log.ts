import { appendFileSync } from 'node:fs';
import { type JobRecord, publicView } from './job-record.ts';
import type { RegistryPaths } from './paths.ts';
import { FILE_MODE, ensureDir, writeJsonAtomic } from './record-store.ts';

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
  | 'refused'
  | 'reconnected'
  | 'redispatched';

export interface AuditEntry {
  type: AuditType;
  [key: string]: unknown;
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
    ensureDir(this.paths.jobLogDir(jobId));
    const line = `${JSON.stringify({ ...entry, at: new Date().toISOString(), job_id: jobId })}\n`;
    appendFileSync(this.paths.events(jobId), line, { mode: FILE_MODE });
  }

  async writeMeta(record: JobRecord): Promise<void> {
    await writeJsonAtomic(this.paths.meta(record.job_id), publicView(record));
  }

  async writeStatus(record: JobRecord): Promise<void> {
    await writeJsonAtomic(this.paths.status(record.job_id), {
      status: record.status,
      updated_at: record.updated_at,
      last_seq: record.last_seq,
    });
  }
}
