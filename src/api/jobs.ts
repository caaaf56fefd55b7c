import { parseCapabilities } from '../core/fleet/fleet-names.ts';
import { UsageError } from '../core/errors.ts';
import { type PublicJobRecord, publicView } from '../core/registry/job-record.ts';
import { type ApiContextOptions, apiContext } from './context.ts';

/** One job, by id: what `mam show` and `mam-redispatch` take. */
export interface JobOptions extends ApiContextOptions {
  jobId: string;
}

/** `mam show` as a function: one job's record, without its token. Throws `UsageError`, `NoSuchJob`, `CorruptRecord`. */
export async function show(opts: JobOptions): Promise<PublicJobRecord> {
  return publicView(apiContext(opts).registry.read(opts.jobId));
}

/**
 * `mam redispatch` as a function (contract §2): the job pending again as a new attempt, with a fresh
 * dispatch token, so that its earlier agent can no longer end it. Throws `UsageError`, `NoSuchJob`.
 */
export async function redispatch(opts: JobOptions): Promise<PublicJobRecord> {
  return publicView((await apiContext(opts).registry.redispatch(opts.jobId)).record);
}

/** Who claims a job in `pick`: what `mam-pick --agent-session … --capabilities …` takes. */
export interface PickOptions extends ApiContextOptions {
  agentSession: string;
  /** Also claim jobs addressed to one of these capabilities. */
  capabilities?: readonly string[] | undefined;
}

/**
 * `mam-pick` as a function (contract §1): claims the oldest pickable pending job for the session
 * (running, in its name). Throws `NothingPickable` when there is none, `UsageError` for a bad name.
 */
export async function pick(opts: PickOptions): Promise<PublicJobRecord> {
  const agentSession = typeof opts.agentSession === 'string' ? opts.agentSession.trim() : '';
  if (agentSession === '') throw new UsageError('agentSession must be a non-empty name');
  const capabilities: string[] = [];
  for (const capability of opts.capabilities ?? []) {
    // The flag's own check, one name at a time: a comma inside a name is a bad name, not two.
    const parsed = parseCapabilities(capability);
    if (typeof parsed === 'string' || parsed.length !== 1 || parsed[0] !== capability) {
      throw new UsageError(`capabilities: ${JSON.stringify(capability)}: expected letters, digits, "_" or "-"`);
    }
    capabilities.push(capability);
  }
  return publicView(await apiContext(opts).registry.pick(agentSession, capabilities));
}
