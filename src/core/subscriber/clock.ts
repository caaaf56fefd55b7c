import { monotonicMs } from '../monotonic.ts';

/**
 * Milliseconds from an arbitrary origin that never go backwards. The subscriber's deadlines are
 * measured on it, so an NTP step, a DST change or `date -s` cannot fire or postpone a timeout; the
 * `timestamp` fields of payloads are advisory (contract §3) and are never read by the watch.
 */
export type MonotonicClock = () => number;

export const systemMonotonicClock: MonotonicClock = monotonicMs;
