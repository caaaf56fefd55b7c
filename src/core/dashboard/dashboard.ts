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
   * fleet's own presence watch (docs/coordination-reference.md, "Agents and presence"); without it,
   * no count.
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

/** What the steps of a running dashboard share: the board and what it cannot hold itself. */
interface DashboardState {
  board: JobBoard;
  actions: ActionTable;
  /** Records that do not parse, by job id (named on the page, skipped). */
  corrupt: Map<string, string>;
  broker: BrokerStatus;
  /** The broker's status changed since the last push. */
  brokerChanged: boolean;
}

/** Something started, and how to stop it. */
type Stop = () => void | Promise<void>;

/**
 * `mam dashboard`: the registry (polled) and the broker (watched like `mam-subscribe --all`) feed a
 * JobBoard; its changes are pushed to every open page as Server-Sent Events. Each step that starts
 * something (a timer, a folder watch, a connection, the listening socket) leaves its stop behind:
 * if a later step fails (the port is taken), every earlier one is stopped before the error goes
 * up, so a caller that goes on (a test, an embedding program) keeps no poller polling.
 */
export async function startDashboard(opts: DashboardOptions): Promise<RunningDashboard> {
  const token = opts.token === '' ? undefined : opts.token;
  checkExposure(opts.host, token, opts.allowActions);
  const origins = new OriginPolicy(opts.trustedOrigins);
  const assets = loadAssets(opts.assetsDir ?? assetsDir());
  const fleet = opts.presence === undefined ? watchFleetPresence(opts.config, opts.log) : undefined;
  const state = boardState(opts, fleet?.source);
  const gate = new AuthGate(token, {
    throttled: (client) => opts.log.warn({ from: client }, 'dashboard: too many wrong tokens from one client; its wrong tokens get 429 for a minute'),
  });
  const hub = new SseHub();

  const stops: Stop[] = [];
  const stopAll = async () => {
    // The last started first: the pushes stop before the board's sources, the sources before the socket.
    // Every stop runs even when one fails; the first failure is reported.
    let failure: unknown;
    for (const stop of stops.splice(0).reverse()) {
      try {
        await stop();
      } catch (err) {
        failure ??= err;
      }
    }
    if (failure !== undefined) throw failure;
  };
  try {
    let feed: LiveFeed | undefined;
    const poller = registryPoller(opts, state, () => feed?.restart());
    // Before the socket: the first page sees every record, not an empty board.
    poller.start();
    stops.push(() => poller.close());
    const server = dashboardServer(opts, state, { gate, origins, hub, assets, poller });
    await server.listen();
    stops.push(() => server.close());
    feed = brokerFeed(opts, state, poller);
    feed.start();
    stops.push(() => feed.close());
    if (fleet) {
      fleet.watch.start();
      stops.push(() => fleet.watch.stop());
    }
    stops.push(startPushes(state, hub, opts.pushIntervalMs ?? PUSH_INTERVAL_MS));
    return { url: server.url, board: state.board, close: stopAll };
  } catch (err) {
    // The step's error is the one worth reading; a stop that also fails must not hide it.
    await stopAll().catch(() => undefined);
    throw err;
  }
}

function boardState(opts: DashboardOptions, fleetPresence: PresenceSource | undefined): DashboardState {
  const actions = new ActionTable([...coreActions({ config: opts.config, registry: opts.registry }), ...(opts.extraActions ?? [])], opts.registryFlag);
  const board = new JobBoard({ presence: opts.presence ?? fleetPresence, actionsFor: (row) => actions.applicable(row) });
  return { board, actions, corrupt: new Map(), broker: { state: 'connecting' }, brokerChanged: false };
}

/** The registry side: each record into the board, with what this host's publishers recorded of it. */
function registryPoller(opts: DashboardOptions, state: DashboardState, restartFeed: () => void): RecordPoller {
  const { registry } = opts;
  const { board, corrupt } = state;
  // The last events of jobs the wire has not shown yet.
  const summarize = (record: JobRecord) => {
    const tail = readAuditTail(registry.paths.events(record.job_id), SUMMARY_TAIL_BYTES);
    for (const e of auditEntries(tail)) {
      if (e.kind !== 'event' || e.seq === null || e.event === null || e.attempt !== record.attempt_id) continue;
      board.note(record.job_id, { attempt: e.attempt, seq: e.seq, event: e.event, detail: e.detail, at: e.at, agent: e.agent ?? null }, false);
    }
  };
  return new RecordPoller(registry, {
    changed(record) {
      corrupt.delete(record.job_id);
      const { newAttempt } = board.syncRecord(record);
      summarize(record);
      if (newAttempt) restartFeed();
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
}

/** The broker side: verified events into the board, rejections as marks, the connection as a status. */
function brokerFeed(opts: DashboardOptions, state: DashboardState, poller: RecordPoller): LiveFeed {
  const { board } = state;
  return new LiveFeed(opts.config, opts.registry, opts.log, {
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
      state.broker = status;
      state.brokerChanged = true;
    },
  });
}

interface ServerParts {
  gate: AuthGate;
  origins: OriginPolicy;
  hub: SseHub;
  assets: ReturnType<typeof loadAssets>;
  poller: RecordPoller;
}

/** The HTTP side, reading the board through a narrow model (not yet listening). */
function dashboardServer(opts: DashboardOptions, state: DashboardState, parts: ServerParts): DashboardServer {
  const { board, actions } = state;
  const snapshot = () => ({
    now: Date.now(),
    auth_required: parts.gate.required,
    actions_enabled: opts.allowActions,
    actions: actions.list(),
    broker: state.broker,
    counts: board.counts(),
    jobs: board.rows(),
    corrupt: [...state.corrupt.keys()],
  });
  return new DashboardServer({
    host: opts.host,
    port: opts.port,
    gate: parts.gate,
    origins: parts.origins,
    hub: parts.hub,
    actions,
    allowActions: opts.allowActions,
    assets: parts.assets,
    log: opts.log,
    model: {
      snapshot,
      job(jobId) {
        const row = board.row(jobId);
        if (!row) return undefined;
        const tail = readAuditTail(opts.registry.paths.events(jobId), TIMELINE_TAIL_BYTES);
        return {
          now: Date.now(),
          job: row,
          record: board.record(jobId),
          timeline: { entries: mergeTimeline(auditEntries(tail), board.liveEntries(jobId)), truncated: tail.truncated },
          cli: actions.cliLines(row),
        };
      },
      afterAction: () => parts.poller.poll(),
    },
  });
}

/** The board's changes to every page at most every `intervalMs`, and a ping that keeps quiet streams open. */
function startPushes(state: DashboardState, hub: SseHub, intervalMs: number): Stop {
  const { board } = state;
  const push = setInterval(() => {
    board.sweep();
    if (!board.hasChanges && !state.brokerChanged) return;
    const changes = board.takeChanges();
    const data: Record<string, unknown> = { now: Date.now(), counts: board.counts(), ...changes };
    if (state.brokerChanged) data.broker = state.broker;
    data.corrupt = [...state.corrupt.keys()];
    state.brokerChanged = false;
    hub.broadcast({ event: 'update', data });
  }, intervalMs);
  const ping = setInterval(() => hub.ping(), PING_INTERVAL_MS);
  return () => {
    clearInterval(push);
    clearInterval(ping);
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
