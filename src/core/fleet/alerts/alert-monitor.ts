import type { MamConfig } from '../../config/config.ts';
import type { Logger } from '../../log.ts';
import { monotonicMs } from '../../monotonic.ts';
import type { JobRecord } from '../../registry/job-record.ts';
import { RecordPoller } from '../../registry/record-poller.ts';
import type { Registry } from '../../registry/registry.ts';
import { FleetAudit } from '../fleet-audit.ts';
import { type Alert, hoursSince, makeAlert } from './alert.ts';
import { PresenceWatch } from './presence-watch.ts';

export interface AlertMonitorOptions {
  emit: (alert: Alert) => void;
  log: Logger;
  /** How often running jobs are checked for silence (default 1 s). */
  tickMs?: number | undefined;
}

/** The registry's full look (a stat per record) this often; changes come sooner, by folder notices. */
const RECORD_POLL_MS = 10_000;

interface Silence {
  attempt: number;
  /** Monotonic ms of the last accepted event (or of when the monitor first saw the job running). */
  lastMs: number;
  alerted: boolean;
}

/**
 * The monitor's alert logic (docs/coordination-reference.md, "Alerts"), fed by the Subscriber's
 * `onPrinted` (every accepted event and resolving state), a tick over the registry's running jobs,
 * and, when the fleet secret is set, the agents' presence. Each condition is raised once until it
 * clears: a stalled job again only after an event, a failure once per attempt, a permission request
 * once per seq.
 */
export class AlertMonitor {
  private readonly silences = new Map<string, Silence>();
  private readonly raised = new Set<string>();
  private readonly audit: FleetAudit;
  private readonly presence: PresenceWatch | undefined;
  /**
   * The registry as last seen. A tick reads it from memory: reading and validating every record
   * each second cost 23 ms/s of CPU at 520 records and 284 ms/s at 10,000 (bench/fleet.mjs). The
   * poller re-reads only records that changed, at once on a folder notice, and stats them all every
   * RECORD_POLL_MS for what notices miss: a job seen running a few seconds late only starts its
   * silence clock late, and its idle window is minutes.
   */
  private readonly records = new Map<string, JobRecord>();
  private readonly poller: RecordPoller;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    config: MamConfig,
    private readonly registry: Registry,
    private readonly opts: AlertMonitorOptions,
  ) {
    this.audit = new FleetAudit(config.logDir);
    this.poller = new RecordPoller(
      registry,
      {
        changed: (record) => this.records.set(record.job_id, record),
        removed: (jobId) => this.records.delete(jobId),
        corrupt: () => undefined, // skipped, as the watch itself skips it (contract §2)
      },
      RECORD_POLL_MS,
    );
    this.presence =
      config.fleetSecret === undefined
        ? undefined
        : new PresenceWatch(config, {
            offline: (agent, detail, lastCheckIn) =>
              this.raise(makeAlert('agent_offline', { agent, job_id: this.currentJob(agent), detail, hours_since_check_in: hoursSince(lastCheckIn) })),
            rejected: (entry) => this.audit.append('rejected', { what: 'presence', ...entry }),
            log: opts.log,
          });
  }

  start(): void {
    // A monitor's subscription brings back every job's retained terminal event: a job that had
    // already failed when this monitor started was alerted by an earlier one (or missed, which is
    // what `mam inbox` is for). Without this baseline each restart re-posted every old failure.
    this.poller.start();
    for (const r of this.records.values()) if (r.status === 'error') this.raised.add(failedKey(r.job_id, r.attempt_id));
    this.timer = setInterval(() => this.tick(), this.opts.tickMs ?? 1_000);
    this.presence?.start();
    if (!this.presence) this.opts.log.info('MAM_FLEET_SECRET not set: no agent_offline alerts');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.poller.close();
    await this.presence?.stop();
  }

  /** Subscriber's onPrinted: an accepted event (`event` set) or a resolving state (`event` null). */
  onPrinted(jobId: string, event: string | null, payload: unknown): void {
    const p = (payload ?? {}) as { seq?: unknown; detail?: unknown; status?: unknown; data?: { attempt_id?: unknown } };
    const attempt = typeof p.data?.attempt_id === 'number' ? p.data.attempt_id : Number(p.data?.attempt_id ?? 0);
    const detail = typeof p.detail === 'string' ? p.detail : '';
    const silence = this.silences.get(jobId);
    if (silence) {
      silence.lastMs = monotonicMs();
      silence.alerted = false;
    }
    if (event === 'error' || (event === null && p.status === 'error')) {
      this.once(failedKey(jobId, attempt), () => makeAlert('failed', { job_id: jobId, agent: this.agentOf(jobId), detail: detail || 'job ended error' }));
    } else if (event === 'permission_required') {
      this.once(`permission:${jobId}:${attempt}:${String(p.seq)}`, () =>
        makeAlert('permission_waiting', { job_id: jobId, agent: this.agentOf(jobId), detail: detail || 'permission required' }),
      );
    }
  }

  /** Running jobs silent for longer than their idle window (`idle_timeout_sec`, K × heartbeat) are stalled. */
  private tick(): void {
    if (this.stopped) return;
    const now = monotonicMs();
    const running = new Set<string>();
    for (const record of this.records.values()) {
      if (record.status !== 'running') continue;
      running.add(record.job_id);
      let s = this.silences.get(record.job_id);
      if (!s || s.attempt !== record.attempt_id) {
        s = { attempt: record.attempt_id, lastMs: now, alerted: false };
        this.silences.set(record.job_id, s);
      }
      const windowMs = record.idle_timeout_sec * 1000;
      if (!s.alerted && now - s.lastMs > windowMs) {
        s.alerted = true;
        const silentMs = now - s.lastMs;
        const detail = `no accepted event for ${Math.round(silentMs / 1000)} s (window ${record.idle_timeout_sec} s)`;
        this.raise(makeAlert('stalled', { job_id: record.job_id, agent: record.agent_session, detail, minutes_since_update: Math.floor(silentMs / 60_000) }));
      }
    }
    for (const jobId of this.silences.keys()) if (!running.has(jobId)) this.silences.delete(jobId);
    this.presence?.checkStale();
  }

  private once(key: string, build: () => Alert): void {
    if (this.raised.has(key)) return;
    this.raised.add(key);
    this.raise(build());
  }

  private raise(alert: Alert): void {
    if (this.stopped) return;
    this.audit.appendAlert(alert);
    this.opts.emit(alert);
  }

  private agentOf(jobId: string): string | null {
    try {
      // Read afresh: the event that raised the alert may have come before the poller saw the pick.
      return this.registry.read(jobId).agent_session;
    } catch {
      return this.records.get(jobId)?.agent_session ?? null;
    }
  }

  /**
   * The agent's running job (the oldest, as `mam agents` shows it), read afresh: an agent dies once,
   * and the in-memory registry may not have seen a pick made just before (with no registry folder
   * when the monitor started, there is no folder notice until the next full look).
   */
  private currentJob(agent: string): string | null {
    return this.registry.list().records.find((r) => r.status === 'running' && r.agent_session === agent)?.job_id ?? null;
  }
}

function failedKey(jobId: string, attempt: number): string {
  return `failed:${jobId}:${attempt}`;
}
