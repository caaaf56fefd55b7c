/**
 * Milliseconds on the monotonic clock, for deadlines and staleness: a wall-clock step (NTP, a
 * resumed laptop, `date -s`) never moves it. process.hrtime rather than performance.now(): same
 * clock, but perf_hooks costs ~1 ms of every start of a one-shot command.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
