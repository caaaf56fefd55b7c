import { UsageError } from '../core/errors.ts';
import { publishEvent } from '../core/publisher/publisher.ts';
import { LIFECYCLE_EVENTS, type LifecycleEvent } from '../core/vocabulary.ts';
import { isPlainObject, wireJson } from '../core/wire/canonical-json.ts';
import { type EventPayload, parseUserData } from '../core/wire/payloads.ts';
import { WireEncodeError } from '../core/wire/wire-errors.ts';
import { type ApiContextOptions, apiContext } from './context.ts';

/** One lifecycle event for `publish`: what `mam-publish --job … --event …` takes, as an object. */
export interface PublishOptions extends ApiContextOptions {
  jobId: string;
  event: LifecycleEvent;
  /** Default `Job <id> <event>`; absolute paths and secrets are scrubbed, as for `--detail`. */
  detail?: string | undefined;
  /** Extra keys carried in `data`: a plain JSON object of at most 64 KiB, none of the reserved keys. */
  data?: Record<string, unknown> | undefined;
  /** Delivery tries in total (default 3, as `--attempts`). */
  attempts?: number | undefined;
}

/**
 * `mam-publish` as a function (contract §3): records the event in the registry, then signs and
 * delivers it with its retained state. Resolves with the signed event as plain JSON values (the
 * object of the line `mam-publish` prints). Throws what the command maps to its exit codes:
 * `UsageError` (bad id, event or data), `NoSuchJob`, `TransitionRefused`, and `NotDelivered` when
 * the event is recorded but the broker did not acknowledge it.
 */
export async function publish(opts: PublishOptions): Promise<EventPayload> {
  if (!(LIFECYCLE_EVENTS as readonly string[]).includes(opts.event)) {
    throw new UsageError(`event must be one of ${LIFECYCLE_EVENTS.join(', ')}, got ${JSON.stringify(opts.event)}`);
  }
  const attempts = opts.attempts ?? 3;
  if (!Number.isSafeInteger(attempts) || attempts < 1) throw new UsageError(`attempts must be a whole number of at least 1, got ${attempts}`);
  const data = opts.data === undefined ? undefined : userData(opts.data);
  const { config, registry } = apiContext(opts);
  const result = await publishEvent(config, registry, { jobId: opts.jobId, event: opts.event, detail: opts.detail, data, attempts });
  return JSON.parse(wireJson(result.event)) as EventPayload;
}

/**
 * The same checks as `--data` (size as sent, reserved keys, Python's number spelling), run on the
 * object's wire text: one rule for the flag and the API, and a value JSON cannot carry (NaN, a Date,
 * a function) is refused rather than silently turned into `null` or a string as `JSON.stringify` would.
 */
function userData(data: unknown): Record<string, unknown> {
  if (!isPlainObject(data)) throw new UsageError('data: must be a plain object');
  let text: string;
  try {
    text = wireJson(data);
  } catch (err) {
    if (err instanceof WireEncodeError) throw new UsageError(`data: ${err.reason}`);
    throw err;
  }
  return parseUserData(text);
}
