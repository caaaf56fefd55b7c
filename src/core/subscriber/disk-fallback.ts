import { readFileSync } from 'node:fs';
import { isLosslessNumber } from 'lossless-json';
import type { JobRecord } from '../registry/job-record.ts';
import type { Registry } from '../registry/registry.ts';
import { closeStatePayload } from '../publisher/close-state.ts';
import { isTerminalEvent } from '../vocabulary.ts';
import { parseWireJson } from '../wire/canonical-json.ts';

/**
 * What a watcher prints for a job it resolves from the registry (contract §4, disk fallback): the
 * current attempt's last recorded terminal payload, else a signed state line built from the record
 * (an operator close, or a terminal event whose audit line is missing).
 */
export function diskResolutionPayload(registry: Registry, record: JobRecord): unknown {
  return lastTerminalPayload(registry, record) ?? stateFromRecord(record);
}

/** A state line built from the record: its close request (kept in `detail`) or its status. */
export function stateFromRecord(record: JobRecord): unknown {
  return closeStatePayload(record, record.detail ?? record.status);
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
    if (!line.startsWith('{"type":"published"')) continue;
    try {
      // Lexemes kept (parseWireJson): the payload is printed as it was signed, so it still verifies.
      const entry = parseWireJson(line) as { seq?: unknown; event?: unknown; payload?: { data?: { attempt_id?: unknown } } };
      if (typeof entry.event !== 'string' || !isTerminalEvent(entry.event)) continue;
      if (numberOf(entry.payload?.data?.attempt_id) !== record.attempt_id) continue;
      // The terminal event that ended the job is its record's last seq and status; a `published`
      // line of a publisher killed before its commit (see Registry.commit) is neither.
      if (numberOf(entry.seq) !== record.last_seq || entry.event !== record.status) continue;
      return entry.payload;
    } catch {
      // A line this version cannot read is skipped, never fatal.
    }
  }
  return undefined;
}

const numberOf = (value: unknown): number | undefined => (isLosslessNumber(value) ? Number(value.value) : typeof value === 'number' ? value : undefined);

/** An operator close leaves its request (or its reason) in `detail`; an agent's terminal event leaves it null. */
export function closedByOperator(record: JobRecord): boolean {
  return record.detail !== null;
}
