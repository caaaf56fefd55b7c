import type { MamConfig } from '../config/config.ts';
import { MamError } from '../errors.ts';
import { BrokerError } from '../mqtt/broker-errors.ts';
import { atServer, resolveBrokerTarget } from '../mqtt/broker-target.ts';
import { formatServer } from '../mqtt/server-list.ts';
import { monotonicMs } from '../monotonic.ts';
import type { JobRecord } from '../registry/job-record.ts';
import type { Registry } from '../registry/registry.ts';
import { wireJson } from '../wire/canonical-json.ts';
import { buildStatePayload } from '../wire/payloads.ts';
import { signPayload } from '../wire/signature.ts';
import { stateTopic } from '../wire/topics.ts';
import { type CloseRequest, defaultDetail } from '../vocabulary.ts';
import { openSession } from './deliver.ts';

/** "One try, a few seconds" (contract §1): the close is already committed; this only informs watchers. */
export const CLOSE_NOTICE_BUDGET_MS = 3_000;

/**
 * The signed state a record stands for: how an operator's close is told to watchers, and what a
 * watcher prints for a job it resolves from the registry. `seq` = the record's `last_seq` (at least
 * 1, the smallest seq the schema admits, for a job that never published), `last_event` = the
 * request (for a close), `detail` names the reason.
 */
export function closeStatePayload(record: JobRecord, request: string, reason: string = request) {
  const unsigned = buildStatePayload({
    jobId: record.job_id,
    seq: Math.max(record.last_seq, 1),
    status: record.status,
    lastEvent: request,
    detail: defaultDetail(record.job_id, reason),
    dispatchToken: record.dispatch_token,
    attemptId: record.attempt_id,
  });
  return signPayload(unsigned, record.auth_token);
}

/**
 * Publishes the close notice, one try per server of the job's list, all within the one budget:
 * a cluster whose first node is down still hears of the close. Resolves with the last failure
 * instead of throwing it.
 */
export async function publishCloseState(config: MamConfig, record: JobRecord, request: string, reason: string = request): Promise<Error | undefined> {
  const target = resolveBrokerTarget(config.broker, record);
  const message = { topic: stateTopic(config.topicRoot, record.job_id), payload: wireJson(closeStatePayload(record, request, reason)), retain: true };
  const deadline = monotonicMs() + CLOSE_NOTICE_BUDGET_MS;
  let failure: Error = new MamError(`no acknowledgement within ${CLOSE_NOTICE_BUDGET_MS / 1000} s`);
  for (let index = 0; index < target.servers.length; index++) {
    const left = deadline - monotonicMs();
    if (left <= 0) break;
    // A server that swallows the CONNECT must not eat the others' share: each gets what is left ÷ those left.
    const share = left / (target.servers.length - index);
    const { session, connected } = openSession(atServer(target, index), 'close');
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new MamError(`${formatServer(target.servers[index]!)}: no acknowledgement within ${(share / 1000).toFixed(1)} s`)),
        share,
      );
    });
    const attempt = (async () => {
      await connected;
      await session.publish([message]);
      await session.end();
    })();
    // When the budget wins, the attempt fails later (destroyed below): a failure already counted.
    attempt.catch(() => undefined);
    try {
      await Promise.race([attempt, budget]);
      return undefined;
    } catch (err) {
      session.destroy();
      failure = err as Error;
      // Refused credentials or a refused topic are the same on every node of a cluster.
      if (err instanceof BrokerError && !err.transient) return failure;
    } finally {
      clearTimeout(timer);
    }
  }
  return failure;
}

/**
 * An operator's close (contract §1): committed in the registry, then told to watchers over the
 * broker, best effort. `notice` is why watchers were not told, when they were not.
 */
export async function closeJob(
  config: MamConfig,
  registry: Registry,
  jobId: string,
  request: CloseRequest,
  reason: string = request,
): Promise<{ record: JobRecord; notice?: Error | undefined }> {
  const { record } = await registry.close(jobId, request, reason === request ? undefined : reason);
  return { record, notice: await publishCloseState(config, record, request, reason) };
}
