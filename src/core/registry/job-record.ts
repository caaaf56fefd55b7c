import { z } from 'zod';

export const JOB_STATUSES = ['pending', 'running', 'completed', 'error', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const TERMINAL_STATUSES: readonly JobStatus[] = ['completed', 'error', 'cancelled'];

export function isTerminalStatus(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

const isoMillis = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'expected ISO-8601 UTC with milliseconds');

/** A job's own broker settings, overriding the configuration's. Never a password (contract §7). */
export const brokerOverrideSchema = z.looseObject({
  host: z.string().min(1).optional(),
  port: z.number().int().min(1).max(65535).optional(),
  tls: z.boolean().optional(),
  username: z.string().optional(),
  ca_certs: z.string().optional(),
  certfile: z.string().optional(),
  keyfile: z.string().optional(),
});

/**
 * The job record (contract §2). `looseObject` keeps fields this version does not know, so a
 * record written by a newer tool (or the Python toolkit) survives a round trip through this one.
 */
export const jobRecordSchema = z.looseObject({
  job_id: z.string().regex(/^[0-9a-f]{8}$/),
  status: z.enum(JOB_STATUSES),
  created_at: isoMillis,
  updated_at: isoMillis,
  agent_session: z.string().nullable(),
  brief: z.string(),
  last_seq: z.number().int().min(0),
  auth_token: z.string().min(16),
  dispatch_token: z.string().regex(/^[0-9a-f]{32}$/),
  attempt_id: z.number().int().min(1),
  transition_seq: z.number().int().min(0),
  heartbeat_sec: z.number().positive(),
  heartbeat_misses: z.number().int().min(1),
  ack_timeout_sec: z.number().positive(),
  idle_timeout_sec: z.number().positive(),
  timeout_sec: z.number().positive(),
  transport: z.enum(['herdr', 'remote']),
  depends_on: z.array(z.string().regex(/^[0-9a-f]{8}$/)),
  detail: z.string().nullable(),
  broker: brokerOverrideSchema.optional(),
  /**
   * The session named at registration (null: any). A pick writes the claiming session into
   * `agent_session`; a redispatch puts this one back, so the new attempt is open to the same
   * sessions as the first. Absent in records written by the Python toolkit: then kept as is.
   */
  registered_session: z.string().nullable().optional(),
});

export type JobRecord = z.infer<typeof jobRecordSchema>;

/** What is printed or logged: the record without its secret. */
export function publicView(record: JobRecord): Omit<JobRecord, 'auth_token'> {
  const { auth_token: _secret, ...rest } = record;
  return rest;
}
