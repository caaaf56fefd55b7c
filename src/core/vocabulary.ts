import * as z from 'zod/mini';

/**
 * The domain's words (contract §1–§4), defined once. Record, payload, flag and audit schemas are
 * derived from these lists; nothing else spells out a status, an event or an id pattern.
 */

/** A job's status in its record and in state payloads (contract §2). */
export const JOB_STATUSES = ['pending', 'running', 'completed', 'error', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** A terminal status never changes again, except by redispatch (contract §2). */
export const TERMINAL_STATUSES = ['completed', 'error', 'cancelled'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

export function isTerminalStatus(status: string): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** What an agent publishes (contract §3). */
export const LIFECYCLE_EVENTS = ['started', 'progress', 'permission_required', 'completed', 'error'] as const;
export type LifecycleEvent = (typeof LIFECYCLE_EVENTS)[number];

/** The events that end a job; they are published retained (contract §3). */
export const TERMINAL_EVENTS = ['completed', 'error'] as const;
export type TerminalEvent = (typeof TERMINAL_EVENTS)[number];

export function isTerminalEvent(event: string): event is TerminalEvent {
  return (TERMINAL_EVENTS as readonly string[]).includes(event);
}

/** The status a lifecycle event gives its job when it ends it; null for one that does not. */
export function terminalStatusOf(event: string): TerminalStatus | null {
  return isTerminalEvent(event) ? event : null;
}

/** `mam-close --request` (contract §1); `deadline_timeout` closes with status `error`. */
export const CLOSE_REQUESTS = ['cancelled', 'deadline_timeout', 'completed', 'error'] as const;
export type CloseRequest = (typeof CLOSE_REQUESTS)[number];

export function statusOfCloseRequest(request: CloseRequest): TerminalStatus {
  return request === 'deadline_timeout' ? 'error' : request;
}

/** How a job reaches its agent (`--transport`). */
export const TRANSPORTS = ['herdr', 'remote'] as const;
export type Transport = (typeof TRANSPORTS)[number];

/** Job ids become file names and topic levels: 8 lowercase hex digits, nothing else. */
export const JOB_ID_PATTERN = /^[0-9a-f]{8}$/;
export const DISPATCH_TOKEN_PATTERN = /^[0-9a-f]{32}$/;

export function isJobId(value: string): boolean {
  return JOB_ID_PATTERN.test(value);
}

export const jobIdSchema = z.string().check(z.regex(JOB_ID_PATTERN, 'expected 8 lowercase hex digits'));
export const dispatchTokenSchema = z.string().check(z.regex(DISPATCH_TOKEN_PATTERN, 'expected 32 lowercase hex digits'));

/** Keys of a payload's `data` that the publisher owns; `--data` may not set them (contract §1). */
export const RESERVED_DATA_KEYS = ['hmac_sig', 'dispatch_token', 'attempt_id'] as const;

/** The detail of a heartbeat's `progress` event (contract §5). */
export const HEARTBEAT_DETAIL = 'heartbeat';

/** `--detail`'s default (contract §1): `Job <id> <event>`. */
export function defaultDetail(jobId: string, what: string): string {
  return `Job ${jobId} ${what}`;
}
