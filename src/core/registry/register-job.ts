import type { MamConfig } from '../config/config.ts';
import { UsageError } from '../errors.ts';
import { parseAddress } from '../fleet/addressing.ts';
import type { Transport } from '../vocabulary.ts';
import type { JobRecord } from './job-record.ts';
import { type JobLimits, resolveJobLimits } from './job-limits.ts';
import type { Registry } from './registry.ts';

/** A new job as asked: only `brief` is needed; what is left out comes from the configuration. */
export interface RegisterJobRequest extends Partial<JobLimits> {
  jobId?: string | undefined;
  agentSession?: string | undefined;
  /** An agent's name or `capability:<name>` (src/core/fleet/addressing.ts). */
  to?: string | undefined;
  brief: string;
  /** Default `herdr`. */
  transport?: Transport | undefined;
  dependsOn?: readonly string[] | undefined;
}

/** The words a caller knows the two by: `--to`/`--agent-session` on the command line, the field names in the API. */
export interface AddressingNames {
  to: string;
  agentSession: string;
}

/** Why `to` (with `agentSession`) cannot address a job, or undefined when it can. */
export function addressingProblem(
  to: string | undefined,
  agentSession: string | undefined,
  names: AddressingNames = { to: 'to', agentSession: 'agentSession' },
): string | undefined {
  if (to === undefined) return undefined;
  const address = parseAddress(to);
  if (typeof address === 'string') return `${names.to}: ${address}`;
  // Both would have to match: a job no session could ever pick is a mistake, said now.
  if (address.kind === 'agent' && agentSession !== undefined && agentSession !== address.name) {
    return `${names.to} and ${names.agentSession} name different agents`;
  }
  return undefined;
}

/** A limit the record schema would refuse, caught as a usage error before the registry is touched. */
function limitsProblem(limits: JobLimits): string | undefined {
  for (const key of ['heartbeatSec', 'ackTimeoutSec', 'idleTimeoutSec', 'timeoutSec'] as const) {
    const sec = limits[key];
    if (sec !== undefined && !(typeof sec === 'number' && Number.isFinite(sec) && sec > 0)) return `${key} must be a positive number of seconds, got ${sec}`;
  }
  if (!(Number.isSafeInteger(limits.heartbeatMisses) && limits.heartbeatMisses >= 1)) {
    return `heartbeatMisses must be a whole number of at least 1, got ${limits.heartbeatMisses}`;
  }
  return undefined;
}

/**
 * `mam-register` (contract §2): a pending job whose timing is what was asked, the configuration
 * (MAM_HEARTBEAT_SEC, MAM_HEARTBEAT_MISSES, MAM_ACK_TIMEOUT_S) and the contract's defaults filling
 * the rest. The command and the library API both register through here, so they cannot drift.
 */
export function registerJob(config: MamConfig, registry: Registry, request: RegisterJobRequest): Promise<JobRecord> {
  const problem = addressingProblem(request.to, request.agentSession);
  if (problem !== undefined) throw new UsageError(problem);
  const limits = resolveJobLimits(request, config);
  const bad = limitsProblem(limits);
  if (bad !== undefined) throw new UsageError(bad);
  return registry.register({
    jobId: request.jobId,
    agentSession: request.agentSession,
    to: request.to,
    brief: request.brief,
    ...limits,
    transport: request.transport ?? 'herdr',
    dependsOn: [...(request.dependsOn ?? [])],
  });
}
