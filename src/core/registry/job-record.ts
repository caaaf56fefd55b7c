import * as z from 'zod/mini';
import '../zod-messages.ts';
import { JOB_STATUSES, TRANSPORTS, dispatchTokenSchema, jobIdSchema } from '../vocabulary.ts';

const isoMillis = z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'expected ISO-8601 UTC with milliseconds'));

/** A job's own broker settings, overriding the configuration's. Never a password (contract §7). */
export const brokerOverrideSchema = z.looseObject({
  host: z.optional(z.string().check(z.minLength(1))),
  port: z.optional(z.int().check(z.minimum(1)).check(z.maximum(65535))),
  tls: z.optional(z.boolean()),
  username: z.optional(z.string()),
  ca_certs: z.optional(z.string()),
  certfile: z.optional(z.string()),
  keyfile: z.optional(z.string()),
});

/**
 * The job record (contract §2). `looseObject` keeps fields this version does not know, so a
 * record written by a newer tool (or the Python toolkit) survives a round trip through this one.
 */
export const jobRecordSchema = z.looseObject({
  job_id: jobIdSchema,
  status: z.enum(JOB_STATUSES),
  created_at: isoMillis,
  updated_at: isoMillis,
  agent_session: z.nullable(z.string()),
  brief: z.string(),
  last_seq: z.int().check(z.minimum(0)),
  auth_token: z.string().check(z.minLength(16)),
  dispatch_token: dispatchTokenSchema,
  attempt_id: z.int().check(z.minimum(1)),
  transition_seq: z.int().check(z.minimum(0)),
  heartbeat_sec: z.number().check(z.positive()),
  heartbeat_misses: z.int().check(z.minimum(1)),
  ack_timeout_sec: z.number().check(z.positive()),
  idle_timeout_sec: z.number().check(z.positive()),
  timeout_sec: z.number().check(z.positive()),
  transport: z.enum(TRANSPORTS),
  depends_on: z.array(jobIdSchema),
  detail: z.nullable(z.string()),
  broker: z.optional(brokerOverrideSchema),
  /**
   * The session named at registration (null: any). A pick writes the claiming session into
   * `agent_session`; a redispatch puts this one back, so the new attempt is open to the same
   * sessions as the first. Absent in records written by the Python toolkit: then kept as is.
   */
  registered_session: z.optional(z.nullable(z.string())),
  /**
   * Who the job is for (`mam-register --to`): an agent's name or `capability:<name>`
   * (src/core/fleet/addressing.ts). Absent in older records: the job is for anyone.
   */
  to: z.optional(z.nullable(z.string())),
});

export type JobRecord = z.infer<typeof jobRecordSchema>;

/** What is printed or logged: the record without its secret. */
export function publicView(record: JobRecord): Omit<JobRecord, 'auth_token'> {
  const { auth_token: _secret, ...rest } = record;
  return rest;
}
