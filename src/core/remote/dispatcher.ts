import type { MamConfig } from '../config/config.ts';
import { TransitionRefused } from '../errors.ts';
import { resolveBrokerTarget } from '../mqtt/broker-target.ts';
import { deliver } from '../publisher/deliver.ts';
import type { JobRecord } from '../registry/job-record.ts';
import { isTerminalStatus } from '../vocabulary.ts';
import type { Registry } from '../registry/registry.ts';
import { wireJson } from '../wire/canonical-json.ts';
import { dispatchTopic } from '../wire/topics.ts';
import { buildDispatch, requireDispatchSecret } from './dispatch-payload.ts';

/**
 * `mam-remote dispatch` (contract §6): one signed, retained message that hands the job to a runner
 * of `session`, its token sealed for the runner. The record is marked `transport: remote`.
 */
export async function dispatchJob(config: MamConfig, registry: Registry, jobId: string, session: string): Promise<JobRecord> {
  const secret = requireDispatchSecret(config.dispatchSecret);
  const current = registry.read(jobId);
  if (isTerminalStatus(current.status)) throw new TransitionRefused(jobId, `job is already ${current.status}; redispatch it first`);
  const record = await registry.patch(jobId, { transport: 'remote', agent_session: session });
  const payload = buildDispatch(record, session, secret);
  await deliver(resolveBrokerTarget(config.broker, record), [{ topic: dispatchTopic(config.topicRoot, jobId), payload: wireJson(payload), retain: true }], {
    attempts: 3,
  });
  registry.audit.append(jobId, { type: 'published', event: 'dispatch', session, attempt_id: record.attempt_id });
  return record;
}
