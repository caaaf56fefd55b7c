import { parseArgs } from 'node:util';
import { MamError } from '../errors.ts';
import { assertJobId } from '../registry/paths.ts';

/**
 * What the starter hands the timer on its command line. No secret goes here (argv is readable by
 * every local user through `ps`): the dispatch token is on the wire anyway, and the broker password
 * and the job's auth token reach the timer through its inherited environment and the record.
 */
export interface TimerArgs {
  jobId: string;
  registryDir: string;
  logDir: string;
  attemptId: number;
  dispatchToken: string;
  periodSec: number;
  watchPid: number;
}

export function timerArgv(a: TimerArgs): string[] {
  return [
    '--job',
    a.jobId,
    '--registry',
    a.registryDir,
    '--log-dir',
    a.logDir,
    '--attempt-id',
    String(a.attemptId),
    '--dispatch-token',
    a.dispatchToken,
    '--period',
    String(a.periodSec),
    '--watch-pid',
    String(a.watchPid),
  ];
}

/** The inverse of `timerArgv`. node:util's parser, not commander: the timer loads as little as it can. */
export function parseTimerArgs(argv: string[]): TimerArgs {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      job: { type: 'string' },
      registry: { type: 'string' },
      'log-dir': { type: 'string' },
      'attempt-id': { type: 'string' },
      'dispatch-token': { type: 'string' },
      period: { type: 'string' },
      'watch-pid': { type: 'string' },
    },
  });
  const need = (name: keyof typeof v): string => {
    const value = v[name];
    if (typeof value !== 'string' || value === '') throw new MamError(`mam-heartbeat: --${name} is required`);
    return value;
  };
  const number = (name: keyof typeof v, ok: (n: number) => boolean): number => {
    const n = Number(need(name));
    if (!ok(n)) throw new MamError(`mam-heartbeat: --${name}: bad value ${need(name)}`);
    return n;
  };
  return {
    jobId: assertJobId(need('job')),
    registryDir: need('registry'),
    logDir: need('log-dir'),
    attemptId: number('attempt-id', (n) => Number.isInteger(n) && n >= 1),
    dispatchToken: need('dispatch-token'),
    periodSec: number('period', (n) => Number.isFinite(n) && n > 0),
    watchPid: number('watch-pid', (n) => Number.isInteger(n) && n > 0),
  };
}
