import { readFileSync } from 'node:fs';
import type { JobRecord } from '../registry/job-record.ts';
import type { Registry } from '../registry/registry.ts';
import { buildStatePayload } from '../wire/payloads.ts';
import { signPayload } from '../wire/signature.ts';

/**
 * What a watcher prints for a job it resolves from the registry (contract §4, disk fallback): the
 * current attempt's last recorded terminal payload, else a signed state line built from the record
 * (an operator close, or a terminal event whose audit line is missing).
 */
export function diskResolutionPayload(registry: Registry, record: JobRecord): unknown {
  return lastTerminalPayload(registry, record) ?? stateFromRecord(record);
}

export function stateFromRecord(record: JobRecord): unknown {
  const lastEvent = record.detail ?? record.status;
  return signPayload(
    buildStatePayload({
      jobId: record.job_id,
      seq: Math.max(record.last_seq, 1),
      status: record.status,
      lastEvent,
      detail: `Job ${record.job_id} ${lastEvent}`,
      dispatchToken: record.dispatch_token,
      attemptId: record.attempt_id,
    }),
    record.auth_token,
  );
}

function lastTerminalPayload(registry: Registry, record: JobRecord): unknown {
  let text: string;
  try {
    text = readFileSync(registry.paths.events(record.job_id), 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!line.includes('"published"')) continue;
    try {
      const entry = JSON.parse(line) as { type?: string; seq?: number; event?: string; payload?: { data?: { attempt_id?: number } } };
      if (entry.type !== 'published' || (entry.event !== 'completed' && entry.event !== 'error')) continue;
      if (entry.payload?.data?.attempt_id !== record.attempt_id) continue;
      // The terminal event that ended the job is its record's last seq and status; a `published`
      // line of a publisher killed before its commit (see Registry.commit) is neither.
      if (entry.seq !== record.last_seq || entry.event !== record.status) continue;
      return entry.payload;
    } catch {
      // A line this version cannot read is skipped, never fatal.
    }
  }
  return undefined;
}

/** An operator close leaves its request (or its reason) in `detail`; an agent's terminal event leaves it null. */
export function closedByOperator(record: JobRecord): boolean {
  return record.detail !== null;
}
