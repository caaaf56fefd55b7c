import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { CorruptRecord, MamError, NoSuchJob, NothingPickable, TransitionRefused } from '../errors.ts';
import { type AuditEntry, AuditLog } from './audit-log.ts';
import type { JobRecord } from './job-record.ts';
import type { JobLimits } from './job-limits.ts';
import { withRegistryLock } from './lock.ts';
import { RegistryPaths, assertJobId } from './paths.ts';
import { type PickIndex, buildPickIndex, readPickIndex, recordSetDigest, withRecord, writePickIndex } from './pick-index.ts';
import { assertWritableRecord, listRecordIds, readRecord, writeRecord } from './record-store.ts';
import { type TransitionRequest, planTransition } from './transitions.ts';
import { isAddressedTo } from '../fleet/addressing.ts';
import { assertPrivateFolder } from '../private-places.ts';
import type { CloseRequest, Transport } from '../vocabulary.ts';

export interface RegisterInput extends JobLimits {
  jobId?: string | undefined;
  agentSession?: string | undefined;
  /** `--to`: an agent's name or `capability:<name>` (src/core/fleet/addressing.ts). */
  to?: string | undefined;
  brief: string;
  transport: Transport;
  dependsOn: string[];
}

export interface CommitHooks {
  /** A last check under the lock (e.g. the heartbeat barrier); a string refuses with that reason. */
  check?: (record: JobRecord) => string | undefined;
  /** Audit lines written with the commit, under the same lock (e.g. the signed payload). */
  audit?: (next: JobRecord, seq: number | undefined) => AuditEntry[];
}

export interface Commit {
  record: JobRecord;
  previous: JobRecord;
  seq?: number | undefined;
}

/** Where the registry reports what it skipped (a corrupt record during a pick); the CLI prints it. */
export type Warn = (message: string) => void;

const newAuthToken = (): string => randomBytes(32).toString('base64url');
export const newDispatchToken = (): string => randomBytes(16).toString('hex');

/**
 * The job registry: records, their audit logs and every transition of contract §2. Reads need no
 * lock (records are replaced atomically); every read-modify-write holds the registry lock.
 */
export class Registry {
  readonly paths: RegistryPaths;
  readonly audit: AuditLog;

  constructor(
    dirs: { registryDir: string; logDir: string },
    private readonly warn: Warn = () => undefined,
  ) {
    // Before anything is read or written: a folder others can write is one they can forge in.
    assertPrivateFolder(dirs.registryDir);
    assertPrivateFolder(dirs.logDir);
    this.paths = new RegistryPaths(dirs.registryDir, dirs.logDir);
    this.audit = new AuditLog(this.paths);
  }

  read(jobId: string): JobRecord {
    return readRecord(this.paths.record(jobId), jobId);
  }

  exists(jobId: string): boolean {
    return existsSync(this.paths.record(jobId));
  }

  /** Every readable record in registration order; corrupt ones are reported, not fatal. */
  list(): { records: JobRecord[]; corrupt: CorruptRecord[] } {
    const records: JobRecord[] = [];
    const corrupt: CorruptRecord[] = [];
    for (const id of listRecordIds(this.paths.registryDir)) {
      try {
        records.push(this.read(id));
      } catch (err) {
        if (err instanceof CorruptRecord) corrupt.push(err);
        else if (!(err instanceof NoSuchJob)) throw err;
      }
    }
    records.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.job_id < b.job_id ? -1 : 1));
    return { records, corrupt };
  }

  withLock<T>(fn: () => Promise<T> | T): Promise<T> {
    return withRegistryLock(this.paths.registryDir, this.paths.lock, fn);
  }

  async register(input: RegisterInput): Promise<JobRecord> {
    return this.withLock(async () => {
      const jobId = input.jobId === undefined ? this.freshJobId() : assertJobId(input.jobId);
      if (this.exists(jobId)) throw new MamError(`job ${jobId} already exists`);
      for (const dep of input.dependsOn) if (!this.exists(assertJobId(dep))) throw new NoSuchJob(dep);
      const now = new Date().toISOString();
      const record: JobRecord = {
        job_id: jobId,
        status: 'pending',
        created_at: now,
        updated_at: now,
        agent_session: input.agentSession ?? null,
        registered_session: input.agentSession ?? null,
        brief: input.brief,
        last_seq: 0,
        auth_token: newAuthToken(),
        dispatch_token: newDispatchToken(),
        attempt_id: 1,
        transition_seq: 0,
        heartbeat_sec: input.heartbeatSec,
        heartbeat_misses: input.heartbeatMisses,
        ack_timeout_sec: input.ackTimeoutSec,
        idle_timeout_sec: input.idleTimeoutSec ?? input.heartbeatMisses * input.heartbeatSec,
        timeout_sec: input.timeoutSec,
        transport: input.transport,
        depends_on: [...new Set(input.dependsOn)],
        detail: null,
        // Written only when asked, so a record without an address reads as it always did.
        ...(input.to === undefined ? {} : { to: input.to }),
      };
      // Index first, built for the folder as it will be: a crash between the two leaves an index
      // of a record set the folder does not hold, which the next pick notices and rebuilds.
      const { index, recordIds } = await this.loadIndex();
      await writePickIndex(this.paths.pickIndex, { ...withRecord(index, record), records_digest: recordSetDigest([...recordIds, jobId]) });
      await writeRecord(this.paths.record(jobId), record);
      await this.audit.writeMeta(record);
      await this.audit.writeStatus(record);
      this.audit.append(jobId, { type: 'registered', attempt_id: 1, transition_seq: 0 });
      return record;
    });
  }

  /**
   * Claims the oldest pickable pending job for `agentSession` (contract §1): also one addressed
   * (`to`) to the session or to one of its `capabilities`, never one addressed to somebody else.
   */
  async pick(agentSession: string, capabilities: readonly string[] = []): Promise<JobRecord> {
    return this.withLock(async () => {
      const { index } = await this.loadIndex();
      const keep: PickIndex['pending'] = [];
      let claimed: JobRecord | undefined;
      for (const entry of index.pending) {
        if (claimed) {
          keep.push(entry);
          continue;
        }
        let record: JobRecord;
        try {
          record = this.read(entry.job_id);
        } catch (err) {
          if (err instanceof NoSuchJob) continue;
          if (err instanceof CorruptRecord) this.warn(`${err.message}; skipped`);
          else throw err;
          keep.push(entry);
          continue;
        }
        if (record.status !== 'pending') continue;
        keep.push(entry);
        if (record.agent_session !== null && record.agent_session !== agentSession) continue;
        if (!isAddressedTo(record.to, agentSession, capabilities)) continue;
        if (!this.dependenciesDone(record)) continue;
        claimed = (await this.commit(record, { kind: 'pick', agentSession }, 'pick')).record;
        keep.pop();
      }
      if (keep.length !== index.pending.length) await writePickIndex(this.paths.pickIndex, { ...index, pending: keep });
      if (!claimed) throw new NothingPickable(agentSession);
      return claimed;
    });
  }

  close(jobId: string, request: CloseRequest, detail?: string): Promise<Commit> {
    return this.update(jobId, { kind: 'close', request, detail }, 'operator');
  }

  redispatch(jobId: string): Promise<Commit> {
    return this.update(jobId, { kind: 'redispatch', dispatchToken: newDispatchToken() }, 'operator');
  }

  /**
   * One compare-and-set under the lock: read, plan, check, write record + status + audit. A refusal
   * is audited and thrown as TransitionRefused (exit 5) before anything else is written.
   */
  update(jobId: string, request: TransitionRequest, source: string, hooks: CommitHooks = {}): Promise<Commit> {
    assertJobId(jobId);
    return this.withLock(async () => {
      const record = this.read(jobId);
      return this.commit(record, request, source, hooks);
    });
  }

  /**
   * Changes fields that are not part of the lifecycle (e.g. `transport` when a job is dispatched
   * remotely) under the lock. Status, seqs, tokens and attempts only move through `update`.
   */
  patch(jobId: string, fields: Partial<Pick<JobRecord, 'transport' | 'agent_session'>>): Promise<JobRecord> {
    return this.withLock(async () => {
      const next: JobRecord = { ...this.read(jobId), ...fields, updated_at: new Date().toISOString() };
      await writeRecord(this.paths.record(jobId), next);
      return next;
    });
  }

  /**
   * Takes in a job registered elsewhere, with its identity (remote runner, contract §6): written
   * only if this registry has no record of it or one of an older attempt. Returns false for a
   * replay: an attempt this registry already holds is never taken again.
   */
  adopt(record: JobRecord): Promise<boolean> {
    return this.withLock(async () => {
      if (this.exists(record.job_id)) {
        const mine = this.read(record.job_id);
        if (mine.attempt_id >= record.attempt_id) return false;
      }
      // Listed before written (see pick-index.ts); a new file changes the record set, so the next
      // pick rebuilds the index from the records anyway.
      if (record.status === 'pending') await this.updateIndex(record);
      await writeRecord(this.paths.record(record.job_id), record);
      await this.audit.writeMeta(record);
      await this.audit.writeStatus(record);
      this.audit.append(record.job_id, { type: 'registered', source: 'remote', attempt_id: record.attempt_id, transition_seq: record.transition_seq });
      return true;
    });
  }

  private async commit(record: JobRecord, request: TransitionRequest, source: string, hooks: CommitHooks = {}): Promise<Commit> {
    const jobId = record.job_id;
    // The audit lines of a commit are written before its record (below). A publisher killed between
    // the two left a `published` seq that its record never took: the next event takes the seq after
    // it, so that no seq is ever written twice, and the one left behind is marked as such.
    const logged = request.kind === 'event' ? this.audit.lastPublishedSeq(jobId, (why) => this.reportCorruptAudit(jobId, why)) : 0;
    const aborted = logged > record.last_seq ? logged : undefined;
    const base = aborted === undefined ? record : { ...record, last_seq: aborted };
    const plan = planTransition(base, request, new Date().toISOString());
    const reason = plan.outcome === 'refused' ? plan.reason : hooks.check?.(record);
    if (plan.outcome === 'refused' || reason !== undefined) {
      this.audit.append(jobId, { type: 'refused', source, request: describe(request), reason, status: record.status, attempt_id: record.attempt_id });
      throw new TransitionRefused(jobId, reason!);
    }
    const next = plan.next;
    // Before the first line of the commit: a record that would not read back is never started on.
    assertWritableRecord(this.paths.record(jobId), next);
    if (aborted !== undefined)
      this.audit.append(jobId, { type: 'publish_failed', seq: aborted, reason: 'aborted: its publisher ended before the seq was committed' });
    // Write-ahead: the hooks' lines (the signed `published` payload) go to the audit before the
    // record takes the seq, so a seq on the record always has its line, whenever a SIGKILL lands.
    for (const entry of hooks.audit?.(next, plan.seq) ?? []) this.audit.append(jobId, entry);
    // A pick maintains the index itself, once, for every entry it walked.
    const pendingChanged = request.kind !== 'pick' && (record.status === 'pending') !== (next.status === 'pending');
    if (pendingChanged && next.status === 'pending') await this.updateIndex(next);
    await writeRecord(this.paths.record(jobId), next);
    if (pendingChanged && next.status !== 'pending') await this.updateIndex(next);
    await this.audit.writeStatus(next);
    if (next.transition_seq !== record.transition_seq) {
      this.audit.append(jobId, {
        type: request.kind === 'redispatch' ? 'redispatched' : 'status_changed',
        source,
        from: record.status,
        to: next.status,
        transition_seq: next.transition_seq,
        attempt_id: next.attempt_id,
        ...(next.detail !== null && next.detail !== record.detail ? { detail: next.detail } : {}),
      });
    }
    return { record: next, previous: record, seq: plan.seq };
  }

  /** A corrupt `published` line: one warning naming the file and what is wrong; the line is left as it is. */
  private reportCorruptAudit(jobId: string, why: string): void {
    this.warn(`${this.paths.events(jobId)}: a published line is corrupt (${why}); skipped, its seq not taken`);
  }

  private dependenciesDone(record: JobRecord): boolean {
    return record.depends_on.every((dep) => {
      try {
        return this.read(dep).status === 'completed';
      } catch {
        return false;
      }
    });
  }

  /** The pick index, rebuilt from the records when it is missing or was built from another set of record files. */
  private async loadIndex(): Promise<{ index: PickIndex; recordIds: string[] }> {
    const recordIds = listRecordIds(this.paths.registryDir);
    const index = readPickIndex(this.paths.pickIndex);
    if (index && index.records_digest === recordSetDigest(recordIds)) return { index, recordIds };
    const rebuilt = buildPickIndex(this.list().records, recordIds);
    await writePickIndex(this.paths.pickIndex, rebuilt);
    return { index: rebuilt, recordIds };
  }

  private async updateIndex(record: JobRecord): Promise<void> {
    await writePickIndex(this.paths.pickIndex, withRecord((await this.loadIndex()).index, record));
  }

  private freshJobId(): string {
    for (;;) {
      const id = randomBytes(4).toString('hex');
      if (!this.exists(id)) return id;
    }
  }
}

function describe(request: TransitionRequest): string {
  switch (request.kind) {
    case 'event':
    case 'mirror':
      return `${request.kind}:${request.event}`;
    case 'close':
      return `close:${request.request}`;
    default:
      return request.kind;
  }
}
