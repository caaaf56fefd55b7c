import type { MamConfig } from '../config/config.ts';
import { ConfigError, UsageError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { JobRecord } from '../registry/job-record.ts';
import type { Registry } from '../registry/registry.ts';
import { PresenceWatch } from '../fleet/alerts/presence-watch.ts';
import { ActionTable, type DashboardAction, coreActions } from './actions.ts';
import { AuthGate, MIN_TOKEN_LENGTH, isLoopbackHost } from './auth-gate.ts';
import { DashboardServer } from './dashboard-server.ts';
import { JobBoard, type PresenceSource, noteOfPayload } from './job-board.ts';
import { type BrokerStatus, LiveFeed } from './live-feed.ts';
import { OriginPolicy } from './origin-policy.ts';
import { RecordPoller } from '../registry/record-poller.ts';
import { SseHub } from './sse-hub.ts';
import { assetsDir, loadAssets } from './static-assets.ts';
import { SUMMARY_TAIL_BYTES, TIMELINE_TAIL_BYTES, auditEntries, mergeTimeline, readAuditTail } from './timeline.ts';

export interface DashboardOptions {
  config: MamConfig;
  registry: Registry;
  log: Logger;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** `MAM_DASHBOARD_TOKEN`: required off loopback and for actions. */
  token?: string | undefined;
  allowActions: boolean;
  /**
   * `--trusted-origin`: exact origins (`https://mam.example.com`) whose `Origin` header a login,
   * logout or action may carry besides this server's own, for a reverse proxy in front.
   */
  trustedOrigins?: readonly string[] | undefined;
  /** `--registry DIR` as given, so the page's CLI lines name the same registry. */
  registryFlag?: string | undefined;
  /**
   * Agent presence, for the `agent offline` count. Unset: with MAM_FLEET_SECRET configured, the
   * fleet's own presence watch (docs/coordination.md); without it, no count.
   */
  presence?: PresenceSource | undefined;
  /** Actions beyond cancel, redispatch, approve and deny (each through the core, as theirs). */
  extraActions?: readonly DashboardAction[] | undefined;
  assetsDir?: string | undefined;
  /** How often changes are pushed to the pages (ms). */
  pushIntervalMs?: number | undefined;
}

export interface RunningDashboard {
  url: string;
  board: JobBoard;
  close(): Promise<void>;
}

/** Board changes go out at most this often: 50 events/s become 4 messages a second. */
export const PUSH_INTERVAL_MS = 250;
/** A comment on every stream this often, so proxies keep quiet streams open. */
const PING_INTERVAL_MS = 15_000;

/**
 * Read-only on loopback by default. Another host needs the token (anyone who can reach the port could
 * otherwise read every job), and so do actions, wherever the dashboard listens.
 */
export function checkExposure(host: string, token: string | undefined, allowActions: boolean): void {
  if (token !== undefined && token.length < MIN_TOKEN_LENGTH) throw new ConfigError(`MAM_DASHBOARD_TOKEN must be at least ${MIN_TOKEN_LENGTH} characters`);
  if (!isLoopbackHost(host) && token === undefined) {
    throw new UsageError(`--host ${host} is not a loopback address: set MAM_DASHBOARD_TOKEN to serve the dashboard beyond this machine`);
  }
  if (allowActions && token === undefined) throw new UsageError('--allow-actions needs MAM_DASHBOARD_TOKEN: actions are only taken from a logged-in page');
}

/**
 * `mam dashboard`: the registry (polled) and the broker (watched like `mam-subscribe --all`) feed a
 * JobBoard; its changes are pushed to every open page as Server-Sent Events.
 */
export async function startDashboard(opts: DashboardOptions): Promise<RunningDashboard> {
  const token = opts.token === '' ? undefined : opts.token;
  checkExposure(opts.host, token, opts.allowActions);
  const origins = new OriginPolicy(opts.trustedOrigins);
  const assets = loadAssets(opts.assetsDir ?? assetsDir());
  const { registry } = opts;
  const actions = new ActionTable([...coreActions({ config: opts.config, registry }), ...(opts.extraActions ?? [])], opts.registryFlag);
  const fleet = opts.presence === undefined ? watchFleetPresence(opts.config, opts.log) : undefined;
  const board = new JobBoard({ presence: opts.presence ?? fleet?.source, actionsFor: (row) => actions.applicable(row) });
  const gate = new AuthGate(token, {
    throttled: (client) => opts.log.warn({ from: client }, 'dashboard: too many wrong tokens from one client; its wrong tokens get 429 for a minute'),
  });
  const hub = new SseHub();
  const corrupt = new Map<string, string>();
  let broker: BrokerStatus = { state: 'connecting' };
  let brokerChanged = false;

  // What this host's publishers recorded: the last events of jobs the wire has not shown yet.
  const summarize = (record: JobRecord) => {
    const tail = readAuditTail(registry.paths.events(record.job_id), SUMMARY_TAIL_BYTES);
    for (const e of auditEntries(tail)) {
      if (e.kind !== 'event' || e.seq === null || e.event === null || e.attempt !== record.attempt_id) continue;
      board.note(record.job_id, { attempt: e.attempt, seq: e.seq, event: e.event, detail: e.detail, at: e.at, agent: e.agent ?? null }, false);
    }
  };

  let feed: LiveFeed | undefined;
  const poller = new RecordPoller(registry, {
    changed(record) {
      corrupt.delete(record.job_id);
      const { newAttempt } = board.syncRecord(record);
      summarize(record);
      if (newAttempt) feed?.restart();
    },
    removed(jobId) {
      corrupt.delete(jobId);
      board.removeJob(jobId);
    },
    corrupt(jobId, err) {
      if (!corrupt.has(jobId)) opts.log.warn({ err: err.message }, 'dashboard: corrupt record skipped');
      corrupt.set(jobId, err.message);
    },
  });

  feed = new LiveFeed(opts.config, registry, opts.log, {
    accepted(jobId, _event, payload) {
      // The verifier read the record, so it exists: a job registered since the last poll is taken in now.
      if (!board.has(jobId)) poller.poll();
      const note = noteOfPayload(payload, Date.now());
      if (note) board.note(jobId, note, true);
    },
    rejected(r) {
      if (r.jobId !== undefined && board.has(r.jobId)) board.noteRejected(r.jobId, r.reason, r.seq, Date.now());
    },
    status(status) {
      broker = status;
      brokerChanged = true;
    },
  });

  const snapshot = () => ({
    now: Date.now(),
    auth_required: gate.required,
    actions_enabled: opts.allowActions,
    actions: actions.list(),
    broker,
    counts: board.counts(),
    jobs: board.rows(),
    corrupt: [...corrupt.keys()],
  });

  const server = new DashboardServer({
    host: opts.host,
    port: opts.port,
    gate,
    origins,
    hub,
    actions,
    allowActions: opts.allowActions,
    assets,
    log: opts.log,
    model: {
      snapshot,
      job(jobId) {
        const row = board.row(jobId);
        if (!row) return undefined;
        const tail = readAuditTail(registry.paths.events(jobId), TIMELINE_TAIL_BYTES);
        return {
          now: Date.now(),
          job: row,
          record: board.record(jobId),
          timeline: { entries: mergeTimeline(auditEntries(tail), board.liveEntries(jobId)), truncated: tail.truncated },
          cli: actions.cliLines(row),
        };
      },
      afterAction: () => poller.poll(),
    },
  });

  poller.start();
  await server.listen();
  feed.start();
  fleet?.watch.start();

  const push = setInterval(() => {
    board.sweep();
    if (!board.hasChanges && !brokerChanged) return;
    const changes = board.takeChanges();
    const data: Record<string, unknown> = { now: Date.now(), counts: board.counts(), ...changes };
    if (brokerChanged) data.broker = broker;
    data.corrupt = [...corrupt.keys()];
    brokerChanged = false;
    hub.broadcast({ event: 'update', data });
  }, opts.pushIntervalMs ?? PUSH_INTERVAL_MS);
  const ping = setInterval(() => hub.ping(), PING_INTERVAL_MS);

  return {
    url: server.url,
    board,
    async close() {
      clearInterval(push);
      clearInterval(ping);
      poller.close();
      await feed.close();
      await fleet?.watch.stop();
      await server.close();
    },
  };
}

/**
 * The fleet's presence watch as the board's source: a running job is `offline` when the agent
 * named by its `agent_session` went offline or stale (as `mam agents` counts an agent's current
 * job). The board's sweep reads it, so a death shows within one push without a job event.
 */
function watchFleetPresence(config: MamConfig, log: Logger): { watch: PresenceWatch; source: PresenceSource } | undefined {
  if (config.fleetSecret === undefined) return undefined;
  const watch = new PresenceWatch(config, {
    log,
    offline: (agent, detail) => log.info({ agent, detail }, 'dashboard: agent offline'),
    rejected: (entry) => log.warn(entry, 'dashboard: presence rejected'),
  });
  const source: PresenceSource = {
    isOffline: (record) => {
      if (record.agent_session === null || record.agent_session === undefined) return false;
      const status = watch.agentStatus(record.agent_session);
      return status === 'offline' || status === 'stale';
    },
  };
  return { watch, source };
}
