import path from 'node:path';
import type { Command } from 'commander';
import * as z from 'zod/mini';
import { UsageError } from '../core/errors.ts';
import type { JobLimits } from '../core/registry/job-limits.ts';
import type { InputSource } from './context.ts';
import { readFlagFile } from './flag-file.ts';
import { countFlag, secondsFlag } from './flags.ts';

/**
 * A brief is a prompt, kept in the record and read by every command that reads the record: 1 MiB is
 * far past any prompt an agent takes, and keeps `/dev/stdin < /dev/zero` from filling memory.
 */
export const MAX_BRIEF_BYTES = 1024 * 1024;

/** The flags that describe a new job's brief and timing: `mam-register` and `mam delegate` share them. */
export function jobFlags(cmd: Command): Command {
  return cmd
    .option('--brief <text>', 'what the agent is asked to do')
    .option('--brief-file <file>', 'read the brief from a file (- for stdin)')
    .option('--heartbeat <sec>', 'heartbeat period N in seconds (default MAM_HEARTBEAT_SEC, 30)')
    .option('--heartbeat-misses <k>', 'beats missed before the job counts as idle (default MAM_HEARTBEAT_MISSES, 4)')
    .option('--ack-timeout <sec>', 'time allowed before `started` (default MAM_ACK_TIMEOUT_S, 180)')
    .option('--idle-timeout <sec>', 'silence allowed after the last event (default misses × heartbeat)')
    .option('--timeout <sec>', 'wall-clock budget of the job (default 3600)');
}

export const jobOptionsShape = {
  brief: z.optional(z.string()),
  briefFile: z.optional(z.string().check(z.minLength(1))),
  heartbeat: z.optional(secondsFlag),
  heartbeatMisses: z.optional(countFlag),
  ackTimeout: z.optional(secondsFlag),
  idleTimeout: z.optional(secondsFlag),
  timeout: z.optional(secondsFlag),
};

type JobOptions = { [K in keyof typeof jobOptionsShape]?: z.infer<(typeof jobOptionsShape)[K]> };

/** The timing flags as asked; the configuration fills the rest (core/registry/job-limits.ts). */
export function askedLimits(opts: JobOptions): Partial<JobLimits> {
  return {
    heartbeatSec: opts.heartbeat,
    heartbeatMisses: opts.heartbeatMisses,
    ackTimeoutSec: opts.ackTimeout,
    idleTimeoutSec: opts.idleTimeout,
    timeoutSec: opts.timeout,
  };
}

/** `--brief` or `--brief-file` (`-`: stdin); neither is an empty brief. */
export function readBrief(opts: Pick<JobOptions, 'brief' | 'briefFile'>, from: { stdin: InputSource; cwd: string }): string {
  if (opts.brief !== undefined && opts.briefFile !== undefined) throw new UsageError('--brief and --brief-file are exclusive');
  if (opts.briefFile === undefined) return opts.brief ?? '';
  const where = `--brief-file: ${opts.briefFile}`;
  if (opts.briefFile === '-') return from.stdin.readAll(MAX_BRIEF_BYTES, where);
  return readFlagFile(path.resolve(from.cwd, opts.briefFile), { where, maxBytes: MAX_BRIEF_BYTES });
}
