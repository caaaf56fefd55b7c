import { UsageError } from '../core/errors.ts';
import { closeJob } from '../core/publisher/close-state.ts';
import { type PublicJobRecord, publicView } from '../core/registry/job-record.ts';
import { CLOSE_REQUESTS, type CloseRequest } from '../core/vocabulary.ts';
import { type ApiContextOptions, apiContext } from './context.ts';

/** An operator's close: what `mam-close --job … --request …` takes, as an object. */
export interface CloseOptions extends ApiContextOptions {
  jobId: string;
  request: CloseRequest;
}

/** What `close` resolves with. */
export interface CloseResult {
  /** The record as closed, without its token (what `mam-close` prints). */
  record: PublicJobRecord;
  /** Why watchers were not told over the broker, when they were not (the close stands: `mam-close` warns and exits 0). */
  notice?: Error | undefined;
}

/**
 * `mam-close` as a function (contract §1): the close is committed in the registry through the
 * transition rules, then its signed, retained state is published to watchers, best effort, by the
 * same code as the command. Throws `UsageError`, `NoSuchJob`, and `TransitionRefused` for a job that
 * has already ended (nothing is written then).
 */
export async function close(opts: CloseOptions): Promise<CloseResult> {
  if (!(CLOSE_REQUESTS as readonly string[]).includes(opts.request)) {
    throw new UsageError(`request must be one of ${CLOSE_REQUESTS.join(', ')}, got ${JSON.stringify(opts.request)}`);
  }
  const { config, registry } = apiContext(opts);
  const { record, notice } = await closeJob(config, registry, opts.jobId, opts.request);
  return { record: publicView(record), notice };
}
