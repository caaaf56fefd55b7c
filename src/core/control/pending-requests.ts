import { readFileSync } from 'node:fs';
import type { JobRecord } from '../registry/job-record.ts';
import type { Registry } from '../registry/registry.ts';

/** Audit lines that settle a request: answered from here, answered to a waiter here, or denied by default. */
const DECIDING_TYPES = new Set(['decision_sent', 'decision_received', 'decision_defaulted']);

/**
 * The seqs of the `permission_required` events this host's audit recorded for the record's current
 * attempt and that no decision line settles yet, oldest first. Only requests that someone waits on
 * count (`data.permission.awaits_decision`, set by permission-request.ts): one published by a hook
 * or by `mam publish` informs the operator, and no answer to it would be read. Only this host's audit is read: an
 * agent on another host (remote transport) publishes into its runner's registry, and its requests
 * are answered with an explicit `--seq` (the delegator's view prints it).
 */
export function undecidedRequests(registry: Registry, record: JobRecord): number[] {
  let text: string;
  try {
    text = readFileSync(registry.paths.events(record.job_id), 'utf8');
  } catch {
    return [];
  }
  const asked: number[] = [];
  const settled = new Set<number>();
  for (const line of text.split('\n')) {
    // Cheap filters first: a long-running job's audit is mostly heartbeats.
    if (!line.includes('permission_required') && !line.includes('"decision_')) continue;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue; // a line torn by a full disk is no request
    }
    if (DECIDING_TYPES.has(entry.type as string) && typeof entry.request_seq === 'number') settled.add(entry.request_seq);
    else if (entry.type === 'published' && entry.event === 'permission_required' && typeof entry.seq === 'number') {
      const data = (entry.payload as { data?: { attempt_id?: unknown; permission?: { awaits_decision?: unknown } } } | undefined)?.data;
      if (data?.attempt_id === record.attempt_id && data.permission?.awaits_decision === true) asked.push(entry.seq);
    }
  }
  return asked.filter((seq) => !settled.has(seq)).sort((a, b) => a - b);
}

/** The newest undecided request of the current attempt (what `mam approve` answers without `--seq`). */
export function latestUndecidedRequest(registry: Registry, record: JobRecord): number | undefined {
  return undecidedRequests(registry, record).at(-1);
}
