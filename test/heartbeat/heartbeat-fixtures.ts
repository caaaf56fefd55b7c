import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { MqttClient } from 'mqtt';
import { afterEach, expect } from 'vitest';
import { isAlive, readProc } from '../../src/core/heartbeat/proc.ts';
import type { JobRecord } from '../../src/core/registry/job-record.ts';
import { parseWireJson } from '../../src/core/wire/canonical-json.ts';
import { verifyPayload } from '../../src/core/wire/signature.ts';
import type { AedesTestBroker } from '../helpers/brokers.ts';
import { type RunResult, type Workspace, makeWorkspace, runBinAsync } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';

export const TOPIC_ROOT = 'python/mqtt/jobs';

/** One wire message of a job as the test's subscriber saw it, with the time it arrived. */
export interface Seen {
  at: number;
  kind: 'events' | 'state';
  payload: Record<string, unknown> & { seq: number; event: string; detail: string; data: Record<string, unknown> };
  verified: boolean;
}

/**
 * Everything a heartbeat test owns — workspaces, watched processes, subscribers — and, after each
 * test, the proof that no timer outlived it: every pid a pidfile ever named, and every process whose
 * command line names one of our workspaces, must be gone. Stragglers are killed, then the test fails.
 */
export function useHeartbeatHarness() {
  const workspaces: Workspace[] = [];
  const children: ChildProcess[] = [];
  const clients: MqttClient[] = [];
  const timerPids = new Set<number>();

  afterEach(async () => {
    // Give timers that are stopping (a self-stop after the test's last step) a moment.
    const deadline = Date.now() + 3_000;
    const alive = () => [...timerPids, ...workspaces.flatMap((ws) => timersIn(ws.root))].filter((pid) => isAlive(pid));
    while (alive().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const stragglers = [...new Set(alive())];
    for (const pid of stragglers) process.kill(pid, 'SIGKILL');
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(clients.map((c) => c.endAsync(true)));
    for (const ws of workspaces) ws.cleanup();
    workspaces.length = children.length = clients.length = 0;
    timerPids.clear();
    expect(stragglers, 'heartbeat timers left running').toEqual([]);
  });

  return {
    timerPids,
    workspace(broker: AedesTestBroker, env: NodeJS.ProcessEnv = {}): Workspace {
      const ws = makeWorkspace({ MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port), ...env });
      workspaces.push(ws);
      return ws;
    },
    /** A stand-in for the agent: a process the test can kill. */
    agent(): ChildProcess {
      const child = spawn('sleep', ['600'], { stdio: 'ignore' });
      children.push(child);
      return child;
    },
    /** A subscriber on `<root>/<job>/+` that records what arrives, verified with the job's token. */
    async watch(broker: AedesTestBroker, ws: Workspace, jobId: string): Promise<() => Seen[]> {
      const client = await connectPlainClient(broker.url);
      clients.push(client);
      const seen: Seen[] = [];
      const token = readRecord(ws, jobId).auth_token;
      client.on('message', (topic, payload) => {
        const parsed = parseWireJson(payload.toString('utf8'));
        seen.push({
          at: Date.now(),
          kind: topic.endsWith('/state') ? 'state' : 'events',
          payload: JSON.parse(payload.toString('utf8')),
          verified: verifyPayload(parsed, token),
        });
      });
      await client.subscribeAsync(`${TOPIC_ROOT}/${jobId}/+`, { qos: 1 });
      return () => seen;
    },
    /** `mam-publish --event started --heartbeat …`, noting the timer's pid from the pidfile. */
    async startBeating(
      ws: Workspace,
      jobId: string,
      periodSec: number,
      watchPid: number,
      extra: string[] = [],
      env: NodeJS.ProcessEnv = {},
    ): Promise<RunResult & { timerPid: number | undefined }> {
      const r = await runBinAsync(
        'mam-publish',
        ['--job', jobId, '--event', 'started', '--heartbeat', String(periodSec), '--watch-pid', String(watchPid), ...extra],
        ws,
        { env },
      );
      const timerPid = readTimerPid(ws, jobId);
      if (timerPid !== undefined) timerPids.add(timerPid);
      return { ...r, timerPid };
    },
  };
}

export async function register(ws: Workspace, args: string[] = []): Promise<JobRecord> {
  const r = await runBinAsync('mam-register', ['--brief', 'beat', ...args], ws);
  if (r.code !== 0) throw new Error(`mam-register exited ${r.code}: ${r.stderr}`);
  return readRecord(ws, (JSON.parse(r.stdout) as { job_id: string }).job_id);
}

export function publish(ws: Workspace, jobId: string, event: string, extra: string[] = []): Promise<RunResult> {
  return runBinAsync('mam-publish', ['--job', jobId, '--event', event, ...extra], ws);
}

export const registryDir = (ws: Workspace): string => path.join(ws.root, '.mam', 'jobs');

export function readRecord(ws: Workspace, jobId: string): JobRecord {
  return JSON.parse(readFileSync(path.join(registryDir(ws), `${jobId}.json`), 'utf8')) as JobRecord;
}

export function readTimerPid(ws: Workspace, jobId: string): number | undefined {
  try {
    return Number(readFileSync(path.join(registryDir(ws), `${jobId}.heartbeat.pid`), 'utf8').trim());
  } catch {
    return undefined;
  }
}

/** Every live heartbeat timer whose command line names this workspace (found even without a pidfile). */
export function timersIn(root: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => {
      const argv = readProc(pid)?.argv ?? [];
      return argv.some((a) => a.endsWith('mam-heartbeat.cjs')) && argv.some((a) => a.startsWith(root));
    });
}

export const beats = (seen: Seen[]): Seen[] => seen.filter((s) => s.kind === 'events' && s.payload.detail === 'heartbeat');

export { sleep, waitUntil } from '../helpers/wait.ts';
