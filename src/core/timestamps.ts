import * as z from 'zod/mini';
import './zod-messages.ts';

/**
 * The two timestamp forms of the contract, in one place. The wire (event, state and decision
 * payloads, §3) carries seconds: `YYYY-MM-DDTHH:MM:SSZ`, as the Python toolkit's strftime writes.
 * Files MAM writes for itself (records §2, presence, bids) carry `Date.toISOString()`'s milliseconds.
 */
export const WIRE_TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
export const ISO_MILLIS_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const wireTimestampSchema = z.string().check(z.regex(WIRE_TIMESTAMP_PATTERN, 'expected YYYY-MM-DDTHH:MM:SSZ'));
export const isoMillisSchema = z.string().check(z.regex(ISO_MILLIS_PATTERN, 'expected ISO-8601 UTC with milliseconds'));

/** `YYYY-MM-DDTHH:MM:SSZ` in UTC, milliseconds dropped (truncated, as Python's strftime does). */
export function wireTimestamp(now: Date): string {
  return `${now.toISOString().slice(0, 19)}Z`;
}
