import { UsageError } from '../core/errors.ts';
import { createLogger } from '../core/log.ts';
import { type WatchOutcome, watch as watchJobs } from '../core/subscriber/subscriber.ts';
import type { WatchTimeoutFlags } from '../core/subscriber/watch-state.ts';
import { wireJson } from '../core/wire/canonical-json.ts';
import type { EventPayload, StatePayload } from '../core/wire/payloads.ts';
import { type ApiContextOptions, apiContext } from './context.ts';

/** What `watch` hands `onEvent`: a lifecycle event, or the state that resolved a job. */
export type WatchedPayload = EventPayload | StatePayload;

/** Which jobs to watch: some by id, or every job under the topic root (a monitor, like `--all`). */
export type WatchTarget = { jobIds: readonly string[]; all?: false | undefined } | { all: true; jobIds?: undefined };

/** The options of `watch`, besides its target. */
export interface WatchCallbacks extends ApiContextOptions {
  /**
   * Each accepted message, in the order `mam-subscribe` prints them: `payload` as plain JSON values,
   * `wireText` the compact JSON exactly as signed (for `parseWireJson` + `verifyPayload`, or to
   * forward byte for byte: a Python sender's `1.0` stays `1.0` there, not in `payload`).
   */
  onEvent: (payload: WatchedPayload, wireText: string) => void;
  /** Once the broker acknowledged the subscriptions: the moment to start an agent (contract §4's `SUBSCRIBED`). */
  onSubscribed?: ((info: { broker: string; watching: string }) => void) | undefined;
  /** Aborting it ends the watch with reason `stopped`, as SIGINT ends `mam-subscribe`. */
  signal?: AbortSignal | undefined;
  /** `--timeout`, `--idle-timeout`, `--ack-timeout` in seconds (0 turns a clock off); default each job's own. */
  timeouts?: WatchTimeoutFlags | undefined;
}

/** Options of `watch`. */
export type WatchOptions = WatchTarget & WatchCallbacks;

/**
 * `mam-subscribe` as a function (contract §4): only verified messages of the watched jobs reach
 * `onEvent`; resolves with how the watch ended (`all_completed`, `job_failed`, a timeout,
 * `broker_unreachable`, `broker_refused`, `stopped`). An exception thrown by `onEvent` or `onSubscribed`
 * ends the watch, and `watch` rejects with it.
 */
export async function watch(opts: WatchOptions): Promise<WatchOutcome> {
  const all = opts.all === true;
  const jobIds = [...new Set(opts.jobIds ?? [])];
  if (all && jobIds.length > 0) throw new UsageError('all and jobIds are exclusive');
  if (!all && jobIds.length === 0) throw new UsageError('jobIds (at least one) or all: true is required');
  for (const [name, sec] of Object.entries(opts.timeouts ?? {})) {
    if (sec !== undefined && !(Number.isFinite(sec) && sec >= 0)) throw new UsageError(`timeouts.${name} must be a number of seconds, 0 or more, got ${sec}`);
  }
  const { config, registry } = apiContext(opts);

  // The subscriber calls back from its message and timer callbacks, where a throw would escape to
  // the embedding program as an uncaught exception: the first one is kept and ends the watch instead.
  let callbackError: { error: unknown } | undefined;
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const guarded = (fn: () => void): void => {
    if (callbackError) return;
    try {
      fn();
    } catch (error) {
      callbackError = { error };
      stop();
    }
  };
  const onAbort = (): void => stop();
  if (opts.signal?.aborted) stop();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });

  try {
    const outcome = await watchJobs(config, registry, {
      jobIds,
      all,
      flags: { ...opts.timeouts },
      remote: false,
      // Nothing is printed: `format` hands each payload over and returns no text.
      write: () => undefined,
      format: (payload) => {
        guarded(() => {
          const wireText = wireJson(payload);
          opts.onEvent(JSON.parse(wireText) as WatchedPayload, wireText);
        });
        return '';
      },
      // An embedding program owns its stderr: rejected messages are audited in the job's log instead.
      log: createLogger('mam-api', 'silent'),
      stopSignal: stopped,
      onSubscribed: (info) => guarded(() => opts.onSubscribed?.(info)),
    });
    if (callbackError) throw callbackError.error;
    return outcome;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
}
