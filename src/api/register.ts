import type { PublicJobRecord } from '../core/registry/job-record.ts';
import { publicView } from '../core/registry/job-record.ts';
import { type RegisterJobRequest, registerJob } from '../core/registry/register-job.ts';
import { type ApiContextOptions, apiContext } from './context.ts';

/**
 * A new job for `register`: what `mam-register` takes, as an object. Only `brief` is needed; a limit
 * left out is the configuration's (`MAM_HEARTBEAT_SEC`, `MAM_HEARTBEAT_MISSES`, `MAM_ACK_TIMEOUT_S`),
 * `idleTimeoutSec` misses × heartbeat and `timeoutSec` 3600 s, as for the command's flags.
 */
export interface RegisterOptions extends ApiContextOptions, RegisterJobRequest {}

/**
 * `mam-register` as a function (contract §2): records a pending job and its audit log. Resolves with
 * the record without its token, as the command prints it. Throws `UsageError` (a bad id, address or
 * limit) and `NoSuchJob` (a dependency with no record).
 */
export async function register(opts: RegisterOptions): Promise<PublicJobRecord> {
  const { config, registry } = apiContext(opts);
  return publicView(await registerJob(config, registry, opts));
}
