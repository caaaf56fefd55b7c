import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import { type JobRecord, publicView } from '../registry/job-record.ts';
import { writeJsonAtomic } from '../registry/record-store.ts';
import type { Registry } from '../registry/registry.ts';
import { isAddressedToAgent } from './addressing.ts';
import { ALERT_KINDS, type Alert } from './alerts/alert.ts';
import { FleetAudit } from './fleet-audit.ts';

/**
 * `mam inbox --agent N` (docs/coordination-reference.md, "Missed signals"): what was addressed to N
 * and not yet handed to it — pending jobs for its name or one of its capabilities (or registered
 * for its session), and the monitor's alerts naming it — each delivered once. The cursor is
 * `<registry>/inbox/<name>.json`, read and written under the registry lock, so two sessions of one
 * agent asking at once split the items between them rather than both getting them.
 */
const cursorSchema = z.object({
  /** job id → the attempt delivered: a redispatched job (a new attempt) is news again. */
  jobs: z.record(z.string(), z.number()),
  /** Bytes of fleet-alerts.ndjson already read. */
  alerts_offset: z.number(),
});
type Cursor = z.infer<typeof cursorSchema>;

/** A line of the alerts file counts only in the shape the monitor writes: a stray or torn line is not an alert. */
const alertLineSchema = z.object({
  alert: z.enum(ALERT_KINDS),
  job_id: z.nullable(z.string()),
  agent: z.nullable(z.string()),
  detail: z.string(),
  at: z.string(),
});

export interface InboxContent {
  agent: string;
  jobs: Array<Omit<JobRecord, 'auth_token'>>;
  alerts: Alert[];
}

export function inboxCursorPath(registryDir: string, agent: string): string {
  return path.join(registryDir, 'inbox', `${agent}.json`);
}

function readCursor(file: string): Cursor {
  try {
    const parsed = cursorSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (parsed.success) return parsed.data;
  } catch {
    // No cursor yet: everything is news.
  }
  return { jobs: {}, alerts_offset: 0 };
}

export async function takeInbox(registry: Registry, logDir: string, agent: string, capabilities: readonly string[]): Promise<InboxContent> {
  const file = inboxCursorPath(registry.paths.registryDir, agent);
  return registry.withLock(async () => {
    const cursor = readCursor(file);
    const jobs = registry
      .list()
      .records.filter((r) => r.status === 'pending')
      .filter((r) => isAddressedToAgent(r.to, agent, capabilities) || r.agent_session === agent)
      .filter((r) => cursor.jobs[r.job_id] !== r.attempt_id);
    for (const r of jobs) cursor.jobs[r.job_id] = r.attempt_id;
    const { alerts, offset } = readAlertsSince(new FleetAudit(logDir).alertsFile, cursor.alerts_offset);
    cursor.alerts_offset = offset;
    await writeJsonAtomic(file, cursor);
    return { agent, jobs: jobs.map(publicView), alerts: alerts.filter((a) => a.agent === agent) };
  });
}

/** Whole lines after `offset`; a line still being written (no newline yet) is left for next time. */
function readAlertsSince(file: string, offset: number): { alerts: Alert[]; offset: number } {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return { alerts: [], offset };
  }
  try {
    const size = fstatSync(fd).size;
    // A file smaller than the cursor was replaced (rotated by hand): read it from the start.
    const from = size < offset ? 0 : offset;
    const buf = Buffer.alloc(size - from);
    readSync(fd, buf, 0, buf.length, from);
    const end = buf.lastIndexOf(0x0a) + 1;
    const alerts: Alert[] = [];
    for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
      if (!line) continue;
      try {
        const parsed = alertLineSchema.safeParse(JSON.parse(line));
        if (parsed.success) alerts.push(parsed.data);
      } catch {
        // A torn line (a disk that filled up): skipped, never fatal.
      }
    }
    return { alerts, offset: from + end };
  } finally {
    closeSync(fd);
  }
}
