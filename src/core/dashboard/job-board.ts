import { isLosslessNumber } from 'lossless-json';
import { type JobRecord, publicView } from '../registry/job-record.ts';
import { type JobStatus, type TerminalStatus, isTerminalStatus, terminalStatusOf } from '../vocabulary.ts';
import { type TimelineEntry, appendBounded, isHeartbeat } from './timeline.ts';

type KnownFields<T> = { [K in keyof T as string extends K ? never : K]: T[K] };

/** A record as the dashboard holds it: never with its token (contract §1, "records printed anywhere"); unknown fields kept. */
export type PublicRecord = Omit<KnownFields<JobRecord>, 'auth_token'> & { [key: string]: unknown };

/**
 * What needs a person, beyond the status: `stalled` (running, no accepted event within its idle
 * allowance), `permission` (its last event that is not a heartbeat is `permission_required`) and
 * `offline` (its agent is gone: issue 14's presence, through `PresenceSource`). One at a time, the
 * most urgent first: an agent that is gone or silent matters more than a question it asked.
 */
export type Health = 'offline' | 'stalled' | 'permission';

/** Issue 14 (fleet coordination) plugs agent presence in here; without it there is no `offline`. */
export interface PresenceSource {
  isOffline(record: PublicRecord): boolean;
}

/** One line of the job list, as the page receives it. */
export interface JobRow {
  job_id: string;
  /** The record's status, moved on by verified events of the current attempt the record has not caught up with. */
  status: JobStatus;
  health: Health | null;
  agent_session: string | null;
  /** The agent a job names (`agent` in its record, or in its `started` event's data), when known. */
  agent: string | null;
  transport: string;
  attempt_id: number;
  last_seq: number;
  /** The last accepted event of this attempt (heartbeats included) and the last one that is not a heartbeat. */
  last_event: string | null;
  last_detail: string | null;
  /** The last accepted event that is not a heartbeat: `permission_required` offers approve/deny. */
  milestone_event: string | null;
  /** Epoch ms of the last accepted event of this attempt; null when none is known. */
  last_beat_at: number | null;
  /** Epoch ms from which the stalled allowance runs (the later of the last event and the record's last change). */
  activity_at: number;
  /** Epoch ms at which a running job becomes stalled; null when it cannot. */
  stalled_at: number | null;
  created_at: string;
  updated_at: string;
  /** The brief's first line, cut: the list's text search and its cell. */
  brief: string;
  /** Names of the actions that apply to the job now (see actions.ts). */
  actions: string[];
}

export interface CountChip {
  key: string;
  label: string;
  count: number;
  attention: boolean;
}

/** An accepted event or state as the board takes it: from the wire (live) or from the audit log. */
export interface ActivityNote {
  attempt: number;
  seq: number;
  /** A lifecycle event, or null for a state (`status` then says what it resolved to). */
  event: string | null;
  status?: string | null;
  detail: string;
  at: number;
  agent?: string | null;
}

interface LiveState {
  attempt: number;
  lastSeq: number;
  lastEvent: string | null;
  lastAt: number | null;
  milestone: { seq: number; event: string; detail: string } | null;
  terminal: TerminalStatus | null;
  agent: string | null;
}

interface BoardJob {
  record: PublicRecord;
  live: LiveState;
  /** Live timeline entries (bounded, heartbeats folded): what the wire showed while the dashboard watched. */
  ring: TimelineEntry[];
  row: JobRow;
}

export interface JobBoardOptions {
  now?: () => number;
  /** Live timeline entries kept per job. */
  ringLimit?: number;
  presence?: PresenceSource;
  /** When the watch began: a job whose events come from another host is given its allowance from here. */
  watchingSince?: number;
  actionsFor?: (row: Omit<JobRow, 'actions'>) => string[];
}

export interface BoardChanges {
  rows: JobRow[];
  removed: string[];
  entries: Array<{ job_id: string; entry: TimelineEntry }>;
  /** Live entries left out of this batch because too many came at once (the page refetches the timeline it shows). */
  dropped: number;
}

export const DEFAULT_RING_LIMIT = 50;
/** Live entries held for the next push at most; a flood beyond it is counted, not kept. */
const PENDING_ENTRIES_LIMIT = 1_000;
const BRIEF_CHARS = 120;

const STATUS_CHIPS: Array<{ key: JobStatus; label: string }> = [
  { key: 'running', label: 'running' },
  { key: 'pending', label: 'pending' },
  { key: 'completed', label: 'completed' },
  { key: 'cancelled', label: 'cancelled' },
];

const num = (v: unknown): number | null => {
  const n = isLosslessNumber(v) ? Number(v.value) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
};

/** An accepted payload (event or state, as the watch printed it) as a note; undefined when it lacks what the board reads. */
export function noteOfPayload(payload: unknown, at: number): ActivityNote | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const p = payload as { seq?: unknown; event?: unknown; status?: unknown; detail?: unknown; data?: { attempt_id?: unknown; agent?: unknown } };
  const seq = num(p.seq);
  const attempt = num(p.data?.attempt_id);
  if (seq === null || attempt === null || typeof p.event !== 'string') return undefined;
  const isState = p.event === 'state';
  return {
    attempt,
    seq,
    event: isState ? null : p.event,
    status: isState && typeof p.status === 'string' ? p.status : null,
    detail: typeof p.detail === 'string' ? p.detail : '',
    at,
    agent: typeof p.data?.agent === 'string' ? p.data.agent : null,
  };
}

/**
 * The dashboard's in-memory view: every registry record (without its token), moved on by verified
 * events, with counts, health and a bounded live timeline per job. It performs no IO: the registry
 * poller, the audit reader and the broker watch feed it, and the push hub drains its changes.
 */
export class JobBoard {
  readonly #jobs = new Map<string, BoardJob>();
  readonly #now: () => number;
  readonly #ringLimit: number;
  readonly #presence: PresenceSource | undefined;
  readonly #watchingSince: number;
  readonly #actionsFor: (row: Omit<JobRow, 'actions'>) => string[];
  readonly #dirty = new Set<string>();
  readonly #removed = new Set<string>();
  #entries: BoardChanges['entries'] = [];
  #dropped = 0;

  constructor(options: JobBoardOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#ringLimit = options.ringLimit ?? DEFAULT_RING_LIMIT;
    this.#presence = options.presence;
    this.#watchingSince = options.watchingSince ?? this.#now();
    this.#actionsFor = options.actionsFor ?? (() => []);
  }

  get size(): number {
    return this.#jobs.size;
  }

  has(jobId: string): boolean {
    return this.#jobs.has(jobId);
  }

  /**
   * A record read from the registry. Returns true when it starts a new attempt (a redispatch): the
   * live state of the old attempt is dropped, since none of its events count any more.
   */
  syncRecord(record: JobRecord): { newAttempt: boolean } {
    const pub = publicView(record) as PublicRecord;
    const job = this.#jobs.get(record.job_id);
    this.#removed.delete(record.job_id);
    if (!job) {
      const fresh: BoardJob = { record: pub, live: emptyLive(record.attempt_id), ring: [], row: undefined as unknown as JobRow };
      fresh.row = this.#rowOf(fresh);
      this.#jobs.set(record.job_id, fresh);
      this.#dirty.add(record.job_id);
      return { newAttempt: false };
    }
    const newAttempt = record.attempt_id > job.live.attempt;
    job.record = pub;
    if (record.attempt_id !== job.live.attempt) job.live = emptyLive(record.attempt_id);
    this.#refresh(job);
    return { newAttempt };
  }

  removeJob(jobId: string): void {
    if (!this.#jobs.delete(jobId)) return;
    this.#dirty.delete(jobId);
    this.#removed.add(jobId);
  }

  /** Job ids on the board, for the registry poller's diff. */
  jobIds(): string[] {
    return [...this.#jobs.keys()];
  }

  /**
   * An accepted event or state. `live` entries (from the wire) go to the job's timeline ring and to
   * the next push; notes from the audit log only move the job's state on. Notes of another attempt
   * than the record's are ignored (the verifier already refuses them on the wire).
   */
  note(jobId: string, note: ActivityNote, live: boolean): void {
    const job = this.#jobs.get(jobId);
    if (!job || note.attempt !== job.record.attempt_id) return;
    const s = job.live;
    if (note.event === null) {
      // A state the watch printed resolves the job (monitor mode prints terminal states only).
      if (note.status && isTerminalStatus(note.status)) s.terminal ??= note.status;
      if (live)
        this.#push(job, {
          kind: 'status',
          at: note.at,
          seq: note.seq,
          attempt: note.attempt,
          event: note.status ?? null,
          detail: `state: ${note.status}`,
          source: 'live',
        });
      this.#refresh(job);
      return;
    }
    if (live && job.ring.some((e) => e.kind === 'event' && e.attempt === note.attempt && note.seq >= e.seq! && note.seq <= (e.seq_to ?? e.seq!))) return;
    if (s.lastAt === null || note.at >= s.lastAt) s.lastAt = note.at;
    if (note.seq >= s.lastSeq) {
      s.lastSeq = note.seq;
      s.lastEvent = note.event;
    }
    if (!isHeartbeat(note.event, note.detail) && (s.milestone === null || note.seq >= s.milestone.seq)) {
      s.milestone = { seq: note.seq, event: note.event, detail: note.detail };
    }
    const terminal = terminalStatusOf(note.event);
    if (terminal) s.terminal ??= terminal;
    if (note.agent) s.agent = note.agent;
    if (live) this.#push(job, { kind: 'event', at: note.at, seq: note.seq, attempt: note.attempt, event: note.event, detail: note.detail, source: 'live' });
    this.#refresh(job);
  }

  /** A message the watch discarded: a mark on the job's timeline, its reason and claimed seq only. */
  noteRejected(jobId: string, reason: string, seq: number | undefined, at: number): void {
    const job = this.#jobs.get(jobId);
    if (!job) return;
    this.#push(job, { kind: 'rejected', at, seq: seq ?? null, attempt: null, event: reason, detail: `message rejected (${reason})`, source: 'live' });
  }

  /** Re-evaluates health on the clock (stalled comes with time, not with a message); changed rows go to the next push. */
  sweep(): void {
    for (const job of this.#jobs.values()) {
      if (isTerminalStatus(job.row.status) && job.row.health === null) continue;
      const health = this.#healthOf(job, job.row.status, job.row.stalled_at);
      if (health !== job.row.health) this.#refresh(job);
    }
  }

  row(jobId: string): JobRow | undefined {
    return this.#jobs.get(jobId)?.row;
  }

  record(jobId: string): PublicRecord | undefined {
    return this.#jobs.get(jobId)?.record;
  }

  liveEntries(jobId: string): readonly TimelineEntry[] {
    return this.#jobs.get(jobId)?.ring ?? [];
  }

  rows(): JobRow[] {
    return [...this.#jobs.values()].map((j) => j.row);
  }

  /** Counts by status, the ones that need attention first; `offline` only when a presence source is plugged in. */
  counts(): CountChip[] {
    let error = 0;
    let stalled = 0;
    let permission = 0;
    let offline = 0;
    const byStatus = new Map<string, number>();
    for (const { row } of this.#jobs.values()) {
      byStatus.set(row.status, (byStatus.get(row.status) ?? 0) + 1);
      if (row.status === 'error') error++;
      if (row.health === 'stalled') stalled++;
      else if (row.health === 'permission') permission++;
      else if (row.health === 'offline') offline++;
    }
    const chips: CountChip[] = [
      { key: 'error', label: 'error', count: error, attention: true },
      { key: 'stalled', label: 'stalled', count: stalled, attention: true },
      { key: 'permission', label: 'waiting for permission', count: permission, attention: true },
    ];
    if (this.#presence) chips.push({ key: 'offline', label: 'agent offline', count: offline, attention: true });
    for (const s of STATUS_CHIPS) chips.push({ key: s.key, label: s.label, count: byStatus.get(s.key) ?? 0, attention: false });
    return chips;
  }

  /** What changed since the last call: rows, removals and new live entries. */
  takeChanges(): BoardChanges {
    const rows: JobRow[] = [];
    for (const id of this.#dirty) {
      const job = this.#jobs.get(id);
      if (job) rows.push(job.row);
    }
    const changes = { rows, removed: [...this.#removed], entries: this.#entries, dropped: this.#dropped };
    this.#dirty.clear();
    this.#removed.clear();
    this.#entries = [];
    this.#dropped = 0;
    return changes;
  }

  get hasChanges(): boolean {
    return this.#dirty.size > 0 || this.#removed.size > 0 || this.#entries.length > 0 || this.#dropped > 0;
  }

  #push(job: BoardJob, entry: TimelineEntry): void {
    appendBounded(job.ring, entry, this.#ringLimit);
    // The folded heartbeat (or the new entry) is the ring's last: that is what the page appends or replaces.
    const last = job.ring[job.ring.length - 1]!;
    if (this.#entries.length >= PENDING_ENTRIES_LIMIT) {
      this.#dropped++;
      return;
    }
    this.#entries.push({ job_id: job.record.job_id, entry: { ...last } });
  }

  #refresh(job: BoardJob): void {
    const row = this.#rowOf(job);
    job.row = row;
    this.#dirty.add(row.job_id);
  }

  #rowOf(job: BoardJob): JobRow {
    const r = job.record;
    const s = job.live;
    const status = displayedStatus(r.status, s);
    const updatedAt = Date.parse(r.updated_at);
    // A remote agent's events never touch this host's record: until its first beat is seen, its
    // allowance runs from when the dashboard began to watch, not from a record that may be hours old.
    const floor = r.transport === 'remote' ? this.#watchingSince : Number.NEGATIVE_INFINITY;
    const activityAt = Math.max(updatedAt, s.lastAt ?? Number.NEGATIVE_INFINITY, floor);
    // Contract §4: before the first accepted event of an attempt the allowance is ack + idle.
    const allowanceMs = (r.idle_timeout_sec + (s.lastAt === null ? r.ack_timeout_sec : 0)) * 1000;
    const stalledAt = status === 'running' ? activityAt + allowanceMs : null;
    const base: Omit<JobRow, 'actions'> = {
      job_id: r.job_id,
      status,
      health: null,
      agent_session: r.agent_session,
      agent: typeof r.agent === 'string' ? r.agent : s.agent,
      transport: r.transport,
      attempt_id: r.attempt_id,
      last_seq: Math.max(r.last_seq, s.lastSeq),
      last_event: s.lastEvent,
      last_detail: s.milestone?.detail ?? null,
      milestone_event: s.milestone?.event ?? null,
      last_beat_at: s.lastAt,
      activity_at: activityAt,
      stalled_at: stalledAt,
      created_at: r.created_at,
      updated_at: r.updated_at,
      brief: (r.brief.split('\n')[0] ?? '').slice(0, BRIEF_CHARS),
    };
    base.health = this.#healthOf(job, status, stalledAt);
    return { ...base, actions: this.#actionsFor(base) };
  }

  #healthOf(job: BoardJob, status: JobStatus, stalledAt: number | null): Health | null {
    if (isTerminalStatus(status)) return null;
    if (this.#presence?.isOffline(job.record)) return 'offline';
    if (stalledAt !== null && this.#now() >= stalledAt) return 'stalled';
    if (job.live.milestone?.event === 'permission_required') return 'permission';
    return null;
  }
}

function emptyLive(attempt: number): LiveState {
  return { attempt, lastSeq: 0, lastEvent: null, lastAt: null, milestone: null, terminal: null, agent: null };
}

/**
 * The record is the truth for what it says; verified events of its current attempt that it has not
 * caught up with move it on (a remote agent's events reach this host's record only through a
 * `--remote` watch). A terminal record — an operator's close — always wins.
 */
function displayedStatus(recordStatus: JobStatus, live: LiveState): JobStatus {
  if (isTerminalStatus(recordStatus)) return recordStatus;
  if (live.terminal) return live.terminal;
  if (recordStatus === 'pending' && live.lastAt !== null) return 'running';
  return recordStatus;
}
