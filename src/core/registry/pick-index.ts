import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as z from 'zod/mini';
import type { JobRecord } from './job-record.ts';
import { writeJsonAtomic } from './record-store.ts';

const indexSchema = z.object({
  version: z.literal(2),
  /** Which record files the index was built from (see `recordSetDigest`); any other set on disk means stale. */
  records_digest: z.string(),
  /** Pending jobs in registration order (created_at, then job_id). */
  pending: z.array(z.object({ job_id: z.string(), created_at: z.string() })),
});
export type PickIndex = z.infer<typeof indexSchema>;

/**
 * `.pick-index.json`: a cache that lets `mam-pick` read a handful of records instead of all of them
 * (docs/registry.md). It is only ever written under the registry lock, and it may only err on the side
 * of listing too much: a listed job that is no longer pending is dropped when a pick reads it, and a
 * set of record files other than the one it was built from (a register that died half-way, a record
 * removed or copied in by hand) rebuilds it from the records. To keep that true, a job becoming
 * pending is added to the index BEFORE its record is written, and a job leaving pending is removed AFTER.
 */
export function readPickIndex(file: string): PickIndex | undefined {
  try {
    const parsed = indexSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Names the set of record files, whatever order the folder lists them in. A count alone took one
 * record removed and another copied in for no change, and a pick then read a stale index.
 */
export function recordSetDigest(jobIds: readonly string[]): string {
  return createHash('sha256')
    .update([...jobIds].sort().join('\n'))
    .digest('hex');
}

export function buildPickIndex(records: JobRecord[], recordIds: readonly string[]): PickIndex {
  const pending = records.filter((r) => r.status === 'pending').map((r) => ({ job_id: r.job_id, created_at: r.created_at }));
  pending.sort(byRegistration);
  return { version: 2, records_digest: recordSetDigest(recordIds), pending };
}

function byRegistration(a: { job_id: string; created_at: string }, b: { job_id: string; created_at: string }): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? -1 : 1;
  return a.job_id < b.job_id ? -1 : a.job_id > b.job_id ? 1 : 0;
}

/** The index with `record` listed as pending or not, as its status says. */
export function withRecord(index: PickIndex, record: JobRecord): PickIndex {
  const pending = index.pending.filter((e) => e.job_id !== record.job_id);
  if (record.status === 'pending') {
    pending.push({ job_id: record.job_id, created_at: record.created_at });
    pending.sort(byRegistration);
  }
  return { ...index, pending };
}

export async function writePickIndex(file: string, index: PickIndex): Promise<void> {
  await writeJsonAtomic(file, index);
}
