import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { isAlive } from '../../src/core/heartbeat/proc.ts';
import { parseWireJson } from '../../src/core/wire/canonical-json.ts';
import { verifyPayload } from '../../src/core/wire/signature.ts';
import { makeWorkspace, type Workspace } from '../helpers/cli.ts';
import { jsonLines, type Proc, runBin, spawnAgent, spawnBin, waitUntil } from './chaos-kit.ts';
import { auditOf, checkRegistry, recordOf } from './disk-invariants.ts';
import type { SecretScan } from './secret-scan.ts';

/**
 * One job as an agent runs it, for the fault suites: registered with a short heartbeat, watched by
 * `mam-subscribe`, started with `--heartbeat` on behalf of a stand-in agent process. The suites
 * break the broker or the network under it and then check what the watcher printed.
 */
export interface JobRun {
  ws: Workspace;
  id: string;
  token: string;
  sub: Proc;
  agent: Proc;
}

export interface JobRunOptions {
  /** Environment of every command (broker address, credentials, MQTT_KEEPALIVE). */
  env: NodeJS.ProcessEnv;
  /** The watcher's own overrides (e.g. its port through a proxy). */
  subEnv?: NodeJS.ProcessEnv;
  /** The heartbeat's and the agent's publishes (e.g. through another proxy). */
  agentEnv?: NodeJS.ProcessEnv;
  heartbeatSec?: number;
  idleTimeoutSec?: number;
  scan: SecretScan;
}

export async function startJob(o: JobRunOptions): Promise<JobRun> {
  const ws = o.scan.workspace(makeWorkspace(o.env));
  const reg = await runBin(
    'mam-register',
    [
      '--brief',
      'chaos job',
      '--heartbeat',
      String(o.heartbeatSec ?? 1),
      '--idle-timeout',
      String(o.idleTimeoutSec ?? 10),
      '--ack-timeout',
      '10',
      '--timeout',
      '600',
    ],
    ws,
  );
  expect(reg.code, reg.stderr).toBe(0);
  const id = (JSON.parse(reg.stdout) as { job_id: string }).job_id;
  const agent = spawnAgent(ws);
  const sub = spawnBin('mam-subscribe', ['--job', id], ws, o.subEnv);
  await sub.waitStderr(/^SUBSCRIBED/m);
  const started = await runBin(
    'mam-publish',
    ['--job', id, '--event', 'started', '--heartbeat', String(o.heartbeatSec ?? 1), '--watch-pid', String(agent.pid)],
    ws,
    o.agentEnv,
  );
  expect(started.code, started.stderr).toBe(0);
  return { ws, id, token: recordOf(ws, id).auth_token, sub, agent };
}

/** Lines the watcher printed so far, parsed. */
export const printed = (run: JobRun): Array<Record<string, any>> => jsonLines(run.sub.stdout);

/** Waits until the watcher printed a line that `match` accepts; false after `ms`. */
export function waitPrinted(run: JobRun, match: (e: Record<string, any>) => boolean, ms = 15_000): Promise<boolean> {
  return waitUntil(() => printed(run).some(match), ms);
}

export const isBeat = (e: Record<string, any>): boolean => e.event === 'progress' && e.detail === 'heartbeat';

export function reconnects(run: JobRun): number {
  return auditOf(run.ws, run.id).filter((l) => l.type === 'reconnected').length;
}

/** The heartbeat timer of the job, if its pidfile names a live process. */
export function timerPid(run: JobRun): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(run.ws.root, '.mam', 'jobs', `${run.id}.heartbeat.pid`), 'utf8').trim());
    return isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

export interface Verdict {
  lines: number;
  beats: number;
  duplicates: number;
}

/**
 * What must hold once the job completed: the watcher exited 0; every printed line verifies with
 * the job's token; no seq was printed twice; the last line is the `completed` event; the heartbeat
 * timer is gone; the registry's seqs balance.
 */
export async function expectCompletedCleanly(run: JobRun, exitWithinMs = 20_000): Promise<Verdict> {
  const timer = setTimeout(() => run.sub.kill(), exitWithinMs);
  const res = await run.sub.done;
  clearTimeout(timer);
  expect(res.code, `watcher: ${res.stderr}`).toBe(0);
  const lines = jsonLines(res.stdout);
  for (const line of lines) {
    expect(verifyPayload(parseWireJson(JSON.stringify(line)), run.token), `printed line does not verify: ${JSON.stringify(line)}`).toBe(true);
  }
  const seqs = lines.map((l) => l.seq as number);
  expect(seqs.length - new Set(seqs).size, `a seq was printed twice: ${seqs.join(',')}`).toBe(0);
  expect(lines.at(-1)).toMatchObject({ event: 'completed', job_id: run.id });
  expect(res.stderr.split('\n').filter((l) => /^ERROR/.test(l))).toEqual([]);
  expect(await waitUntil(() => timerPid(run) === undefined, 5_000), 'heartbeat timer still running after the terminal').toBe(true);
  expect(checkRegistry(run.ws).seqProblems).toEqual([]);
  run.agent.kill();
  return { lines: lines.length, beats: lines.filter(isBeat).length, duplicates: auditOf(run.ws, run.id).filter((l) => l.type === 'duplicate').length };
}
