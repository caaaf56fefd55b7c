import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, onTestFinished } from 'vitest';
import { type MamConfig, loadConfig } from '../../src/core/config/config.ts';
import { isAlive } from '../../src/core/heartbeat/proc.ts';
import { type BinProcess, spawnBin } from '../brokers/bin-process.ts';
import type { RunResult, Workspace } from '../helpers/cli.ts';
import { runInProcess } from '../helpers/in-process.ts';
import { waitUntil } from '../helpers/wait.ts';
import { brokerWorkspace } from '../publisher/publish-fixtures.ts';

export const SECRET = 'fleet-test-secret';

/** A workspace on 127.0.0.1:`port` with the fleet secret set; removed when the test ends. */
export function fleetWorkspace(port: number, extraEnv: NodeJS.ProcessEnv = {}): Workspace {
  return brokerWorkspace(port, { MAM_FLEET_SECRET: SECRET, ...extraEnv });
}

/** The configuration the workspace's commands load, for calling the core in process. */
export function configOf(ws: Workspace): MamConfig {
  return loadConfig(ws.env as NodeJS.ProcessEnv, ws.root);
}

export interface AgentRowOut {
  name: string;
  status: string;
  reason: string | null;
  host: string;
  capabilities: string[];
  current_job: string | null;
  last_seen: string;
}

export async function agentsJson(ws: Workspace): Promise<AgentRowOut[]> {
  const r = await runInProcess('mam', ['agents', '--json'], ws);
  if (r.code !== 0) throw new Error(`mam agents exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as AgentRowOut[];
}

/** Polls `mam agents --json` until `agent` shows `status` (a real read of the broker each time). */
export async function waitForStatus(ws: Workspace, agent: string, status: string, timeoutMs = 15_000): Promise<AgentRowOut> {
  let row: AgentRowOut | undefined;
  await expect
    .poll(
      async () => {
        row = (await agentsJson(ws)).find((r) => r.name === agent);
        return row?.status;
      },
      { timeout: timeoutMs, interval: 100 },
    )
    .toBe(status);
  return row!;
}

export function fleetAudit(ws: Workspace): Array<Record<string, unknown>> {
  const file = path.join(ws.root, '.mam', 'logs', 'fleet.ndjson');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * The turn holders that this workspace's winning claims left (audited as `turn_held`), each to be
 * killed when the test ends, so that none outlives it. Call it right after a claim: the
 * workspace's own cleanup removes the audit.
 */
export function stopTurnHoldersAtEnd(ws: Workspace): number[] {
  const pids = fleetAudit(ws)
    .filter((e) => e.type === 'turn_held' && typeof e.holder_pid === 'number')
    .map((e) => e.holder_pid as number);
  const alive = isAlive; // a zombie counts as gone: this host's init reaps only now and then
  // SIGKILL (it has nothing to flush), and waited for: a holder still answering clears would write
  // its audit into a folder being removed.
  onTestFinished(async () => {
    for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
    await waitUntil(() => !pids.some(alive), 5_000);
  });
  return pids;
}

export function jsonOut(r: RunResult): Record<string, any> {
  return JSON.parse(r.stdout) as Record<string, any>;
}

export interface AlertLine {
  alert: string;
  job_id: string | null;
  agent: string | null;
  detail: string;
  at: string;
  minutes_since_update?: number;
  hours_since_check_in?: number;
}

export interface Monitor {
  proc: BinProcess;
  /** Every JSON line printed so far (events, states and alerts). */
  lines(): Array<Record<string, any>>;
  alerts(): AlertLine[];
  /** Waits for an alert matching `match`; fails the test with what was printed if none comes. */
  waitForAlert(match: Partial<AlertLine>, timeoutMs?: number): Promise<AlertLine>;
  /** Waits for an event line (`event` set, not an alert) of `jobId`. */
  waitForEvent(jobId: string, event: string, timeoutMs?: number): Promise<void>;
}

/**
 * `mam-subscribe --all --alerts …` as a user runs it, at log level info so that its stderr says
 * when the presence watch is subscribed: an agent killed before that would only set the baseline.
 */
export async function startMonitor(ws: Workspace, args: string[] = []): Promise<Monitor> {
  const proc = spawnBin('mam-subscribe', ['--all', '--alerts', ...args], ws, { env: { MAM_LOG_LEVEL: 'info' } });
  await proc.waitForStderr(/^SUBSCRIBED all /m);
  await proc.waitForStderr(/watching agent presence/);
  const lines = () =>
    proc.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, any>);
  const alerts = () => lines().filter((l): l is AlertLine & Record<string, any> => typeof l.alert === 'string') as AlertLine[];
  const matches = (a: AlertLine, m: Partial<AlertLine>) => Object.entries(m).every(([k, v]) => a[k as keyof AlertLine] === v);
  return {
    proc,
    lines,
    alerts,
    async waitForAlert(match, timeoutMs = 15_000) {
      const ok = await waitUntil(() => alerts().some((a) => matches(a, match)), timeoutMs);
      if (!ok) throw new Error(`no alert ${JSON.stringify(match)} within ${timeoutMs} ms; stdout:\n${proc.stdout}\nstderr:\n${proc.stderr}`);
      return alerts().find((a) => matches(a, match))!;
    },
    async waitForEvent(jobId, event, timeoutMs = 15_000) {
      const ok = await waitUntil(() => lines().some((l) => l.alert === undefined && l.job_id === jobId && l.event === event), timeoutMs);
      if (!ok) throw new Error(`no ${event} line for ${jobId} within ${timeoutMs} ms; stdout:\n${proc.stdout}\nstderr:\n${proc.stderr}`);
    },
  };
}

/** `mam-register` + `mam-pick`: a job running for `session`, as an agent would hold it. */
export async function runningJob(ws: Workspace, id: string, session: string, ...registerArgs: string[]): Promise<void> {
  const reg = await runInProcess('mam-register', ['--job-id', id, '--brief', `job ${id}`, '--agent-session', session, ...registerArgs], ws);
  if (reg.code !== 0) throw new Error(`mam-register ${id}: ${reg.stderr}`);
  const pick = await runInProcess('mam-pick', ['--agent-session', session], ws);
  if (pick.code !== 0 || (JSON.parse(pick.stdout) as { job_id: string }).job_id !== id)
    throw new Error(`mam-pick ${session}: exit ${pick.code} ${pick.stdout}${pick.stderr}`);
}

/** `mam-publish`, which must exit 0. */
export async function publishEvent(ws: Workspace, id: string, event: string, ...args: string[]): Promise<void> {
  const r = await runInProcess('mam-publish', ['--job', id, '--event', event, ...args], ws);
  if (r.code !== 0) throw new Error(`mam-publish ${id} ${event}: exit ${r.code} ${r.stderr}`);
}
