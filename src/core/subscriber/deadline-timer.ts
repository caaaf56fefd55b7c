import type { MonotonicClock } from './clock.ts';

/**
 * One timer for the watch's next deadline, as WatchState reports it (monotonic ms). Asked again after
 * every input; a tick that comes late changes nothing, since WatchState settles deadlines on its clock.
 */
export class DeadlineTimer {
  private timer: NodeJS.Timeout | undefined;
  /** The deadline the running timer was set for. */
  private armedAt = 0;

  constructor(
    private readonly now: MonotonicClock,
    private readonly due: () => void,
  ) {}

  arm(at: number | null): void {
    if (at === null) {
      this.cancel();
      return;
    }
    // A timer due no later than `at` is kept: each event pushes an idle deadline back, and a timer
    // per event cost a monitor a clearTimeout and a setTimeout per line. A tick that comes early
    // finds nothing due (WatchState decides on its clock) and the watch arms for the new deadline.
    if (this.timer !== undefined && this.armedAt <= at) return;
    clearTimeout(this.timer);
    this.armedAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.due();
      },
      Math.max(0, at - this.now()) + 1,
    );
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
