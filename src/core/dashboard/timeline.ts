import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { HEARTBEAT_DETAIL } from '../vocabulary.ts';

/**
 * A job's timeline for the dashboard: its audit log (`events.ndjson`, contract §2) merged with what
 * the dashboard's own watch saw on the wire. Rejected messages appear as a reason and a seq only,
 * never with their content: a forgery must not reach the page.
 */
export type EntryKind =
  | 'event'
  | 'rejected'
  | 'seq_gap'
  | 'duplicate'
  | 'ignored'
  | 'status'
  | 'registered'
  | 'redispatched'
  | 'refused'
  | 'publish_failed'
  | 'reconnected'
  | 'decision';

export interface TimelineEntry {
  kind: EntryKind;
  /** Epoch ms: the audit line's `at`, or when the dashboard accepted the message. */
  at: number;
  seq: number | null;
  /** A run of consecutive heartbeats folded into one entry ends at this seq. */
  seq_to?: number;
  /** How many heartbeats the entry stands for (folded runs only). */
  count?: number;
  attempt: number | null;
  /** The lifecycle event; for other kinds a short word (the rejection reason, the new status). */
  event: string | null;
  detail: string;
  source: 'audit' | 'live';
  /** Seqs of the same attempt never seen before this one (set by `mergeTimeline`). */
  gap?: number;
  /** The `agent` an event's data names (a `started` usually), when it names one. */
  agent?: string;
}

/** How much of a log's end the job view reads: the recent past, in one read, whatever the log's size. */
export const TIMELINE_TAIL_BYTES = 256 * 1024;
/** How much the board reads per job to learn its last events at start and after a record change. */
export const SUMMARY_TAIL_BYTES = 16 * 1024;
/** A live rejection this close to an audited one of the same seq and reason is that one (the audit line is written first). */
const SAME_REJECTION_MS = 2_000;
/** Entries a job view shows at most (the newest). */
export const TIMELINE_LIMIT = 400;

export interface AuditTail {
  lines: string[];
  /** True when the log holds older lines than these. */
  truncated: boolean;
}

/** The last `maxBytes` of a log as whole lines; a missing log is empty. */
export function readAuditTail(file: string, maxBytes: number): AuditTail {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return { lines: [], truncated: false };
  }
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - maxBytes);
    const buf = Buffer.alloc(size - start);
    readSync(fd, buf, 0, buf.length, start);
    const lines = buf.toString('utf8').split('\n');
    // A read that starts mid-file starts mid-line: that first piece is no line.
    if (start > 0) lines.shift();
    return { lines: lines.filter((l) => l !== ''), truncated: start > 0 };
  } finally {
    closeSync(fd);
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) ? v : null);

export const isHeartbeat = (event: string | null, detail: string): boolean => event === 'progress' && detail === HEARTBEAT_DETAIL;

/** One audit line as a timeline entry; undefined for a line this version does not show or cannot read. */
export function auditEntry(line: string): TimelineEntry | undefined {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  const at = Date.parse(str(o.at) ?? '');
  if (!Number.isFinite(at)) return undefined;
  const seq = int(o.seq);
  const attempt = int(o.attempt_id);
  const base = { at, seq, attempt, source: 'audit' as const };
  switch (o.type) {
    case 'published': {
      const payload = (o.payload ?? {}) as { detail?: unknown; data?: { attempt_id?: unknown; agent?: unknown } };
      const agent = str(payload.data?.agent);
      const entry: TimelineEntry = { ...base, kind: 'event', event: str(o.event), detail: str(payload.detail) ?? '', attempt: int(payload.data?.attempt_id) };
      if (agent !== null) entry.agent = agent;
      return entry;
    }
    case 'rejected':
      // The reason and the seq it claimed; its detail may quote the message, which never goes to the page.
      return { ...base, kind: 'rejected', event: str(o.reason) ?? 'rejected', detail: `message rejected (${str(o.reason) ?? 'unknown'})` };
    case 'seq_gap': {
      const expected = int(o.expected);
      const missing = expected !== null && seq !== null ? (seq - 1 > expected ? `${expected}–${seq - 1}` : `${expected}`) : '?';
      return { ...base, kind: 'seq_gap', event: 'seq_gap', detail: `seq ${missing} not seen by a watcher` };
    }
    case 'duplicate':
      return { ...base, kind: 'duplicate', event: str(o.event), detail: 'duplicate delivery dropped' };
    case 'ignored_after_terminal':
      return { ...base, kind: 'ignored', event: str(o.event), detail: `ignored: job already ${str(o.status) ?? 'ended'}` };
    case 'status_changed': {
      const why = str(o.detail);
      return { ...base, kind: 'status', event: str(o.to), detail: `${str(o.from)} → ${str(o.to)} (${str(o.source) ?? '?'})${why ? `: ${why}` : ''}` };
    }
    case 'registered':
      return { ...base, kind: 'registered', event: 'registered', detail: str(o.source) === 'remote' ? 'registered (from a remote dispatch)' : 'registered' };
    case 'redispatched':
      return { ...base, kind: 'redispatched', event: 'redispatched', detail: `redispatched as attempt ${attempt ?? '?'}` };
    case 'refused':
      return { ...base, kind: 'refused', event: 'refused', detail: `refused ${str(o.request) ?? ''}: ${str(o.reason) ?? ''}`.trim() };
    case 'publish_failed':
      return { ...base, kind: 'publish_failed', event: 'publish_failed', detail: str(o.reason) ?? 'not delivered' };
    case 'decision_sent':
    case 'decision_received':
    case 'decision_defaulted':
      return { ...base, seq: null, kind: 'decision', event: `decision: ${str(o.decision) ?? '?'}`, detail: decisionDetail(o) };
    case 'reconnected':
      return { ...base, kind: 'reconnected', event: 'reconnected', detail: 'a watcher reconnected to the broker' };
    default:
      return undefined;
  }
}

/**
 * A permission answer (docs/permissions.md) as one line: which request it answers, who gave it
 * (`mam approve`, this dashboard, a timeout), and the reason the agent is told — scrubbed before it
 * was sent, and never the decision's payload.
 */
function decisionDetail(o: Record<string, unknown>): string {
  const request = int(o.request_seq) === null ? 'the request' : `the request at #${int(o.request_seq)}`;
  const reason = str(o.reason);
  const how =
    o.type === 'decision_sent'
      ? `sent for ${request} (${str(o.source) ?? 'operator'})`
      : o.type === 'decision_received'
        ? `received for ${request} by the waiting side`
        : `given by default for ${request} (${str(o.by) ?? '?'})`;
  return reason ? `${how}: ${reason}` : how;
}

export function auditEntries(tail: AuditTail): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  for (const line of tail.lines) {
    const entry = auditEntry(line);
    if (entry) out.push(entry);
  }
  return out;
}

/**
 * Appends a live entry to a bounded ring, folding a heartbeat into the previous entry when it is the
 * next seq of a run of heartbeats: a thousand idle agents beat every 30 s, and their timelines must
 * not grow by a line a beat.
 */
export function appendBounded(ring: TimelineEntry[], entry: TimelineEntry, limit: number): void {
  const last = ring[ring.length - 1];
  if (
    last &&
    entry.kind === 'event' &&
    last.kind === 'event' &&
    isHeartbeat(entry.event, entry.detail) &&
    isHeartbeat(last.event, last.detail) &&
    last.attempt === entry.attempt &&
    entry.seq !== null &&
    entry.seq === (last.seq_to ?? last.seq ?? Number.NaN) + 1
  ) {
    last.seq_to = entry.seq;
    last.count = (last.count ?? 1) + 1;
    last.at = entry.at;
    return;
  }
  ring.push(entry);
  if (ring.length > limit) ring.splice(0, ring.length - limit);
}

/**
 * The audit's entries and the live ones, one line per fact: a live event the audit also holds (this
 * host published it) is dropped. Ordered by time; `gap` marks seqs of an attempt that neither saw.
 */
export function mergeTimeline(audit: TimelineEntry[], live: readonly TimelineEntry[], limit = TIMELINE_LIMIT): TimelineEntry[] {
  const known = new Set<string>();
  for (const e of audit) if (e.kind === 'event') known.add(`${e.attempt}:${e.seq}`);
  const rejections = audit.filter((e) => e.kind === 'rejected');
  const merged = audit.map((e) => ({ ...e }));
  for (const e of live) {
    if (e.kind === 'event' && known.has(`${e.attempt}:${e.seq_to ?? e.seq}`)) continue;
    // The dashboard's own watch audits a rejection before it marks it live: the same fact twice.
    if (e.kind === 'rejected' && rejections.some((a) => a.event === e.event && a.seq === e.seq && Math.abs(a.at - e.at) <= SAME_REJECTION_MS)) continue;
    merged.push({ ...e });
  }
  markGaps(merged);
  merged.sort((a, b) => a.at - b.at || (a.seq ?? 0) - (b.seq ?? 0));
  return merged.length > limit ? merged.slice(merged.length - limit) : merged;
}

function markGaps(entries: TimelineEntry[]): void {
  const events = entries.filter((e) => e.kind === 'event' && e.seq !== null);
  events.sort((a, b) => (a.attempt ?? 0) - (b.attempt ?? 0) || a.seq! - b.seq!);
  let attempt: number | null = null;
  let prevTo: number | null = null;
  for (const e of events) {
    if (e.attempt !== attempt) {
      attempt = e.attempt;
      prevTo = null;
    }
    if (prevTo !== null && e.seq! > prevTo + 1) e.gap = e.seq! - prevTo - 1;
    prevTo = Math.max(prevTo ?? 0, e.seq_to ?? e.seq!);
  }
}
