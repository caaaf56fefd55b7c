import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach } from 'vitest';
import { type Workspace, binPath, runBinAsync } from '../helpers/cli.ts';

/** One event line of `mam delegate --json`, with when it was printed (ms since the start). */
export interface PrintedEvent {
  event: string;
  detail: string;
  seq: number;
  atMs: number;
  data?: Record<string, unknown>;
}

export interface DelegateRun {
  code: number | null;
  /** Heartbeats (`progress` with detail `heartbeat`) left out: their count depends on the machine's speed. */
  events: PrintedEvent[];
  stdout: string;
  stderr: string;
  ms: number;
  jobId: string;
  /** What `mam approve`/`mam deny` exited with, when the run answered a request. */
  answers: number[];
}

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const c of running) c.kill('SIGKILL');
  running.clear();
});

/**
 * `mam delegate --json --agent <cli>` as a user runs it, in `ws`, answering every permission
 * request that awaits a decision with `answer` (`mam approve` / `mam deny --job ID --seq N`), the
 * moment the delegate prints it.
 */
export function delegate(ws: Workspace, args: string[], env: NodeJS.ProcessEnv, answer?: 'approve' | 'deny'): Promise<DelegateRun> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [binPath('mam'), 'delegate', '--json', ...args], {
    cwd: ws.root,
    env: { ...ws.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  let partial = '';
  let jobId = '';
  const events: PrintedEvent[] = [];
  const answers: Promise<number>[] = [];
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    partial += d;
    for (let nl = partial.indexOf('\n'); nl !== -1; nl = partial.indexOf('\n')) {
      const line = JSON.parse(partial.slice(0, nl)) as { event: string; detail: string; seq: number; job_id: string; data?: Record<string, unknown> };
      partial = partial.slice(nl + 1);
      jobId = line.job_id;
      if (line.event === 'progress' && line.detail === 'heartbeat') continue;
      events.push({ event: line.event, detail: line.detail, seq: line.seq, atMs: Math.round(performance.now() - t0), data: line.data });
      const permission = line.data?.permission as { awaits_decision?: boolean } | undefined;
      if (answer !== undefined && line.event === 'permission_required' && permission?.awaits_decision === true) {
        const reason = answer === 'deny' ? ['--reason', 'not this one, says the test'] : [];
        answers.push(
          runBinAsync('mam', [answer, '--job', line.job_id, '--seq', String(line.seq), ...reason], { ...ws, env: { ...ws.env, ...env } }).then(
            (r) => r.code ?? -1,
          ),
        );
      }
    }
  });
  return new Promise((resolve) => {
    child.on('close', async (code) => {
      running.delete(child);
      resolve({ code, events, stdout, stderr, ms: Math.round(performance.now() - t0), jobId, answers: await Promise.all(answers) });
    });
  });
}

/** `started → permission_required → …`: the events' names in order. */
export const names = (run: DelegateRun): string[] => run.events.map((e) => e.event);

/** One line for the test log: what ran, what MAM printed and when, how it ended. */
export function describeRun(label: string, run: DelegateRun): string {
  return `${label}: exit ${run.code} in ${run.ms} ms — ${run.events.map((e) => `${e.event}@${e.atMs}`).join(' → ')}`;
}
