import type { MonotonicClock } from './clock.ts';

/**
 * One timer for the watch's next deadline, as WatchState reports it (monotonic ms). Re-armed after
 * every input; a tick that comes late changes nothing, since WatchState settles deadlines on its clock.
 */
export class DeadlineTimer {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly now: MonotonicClock,
    private readonly due: () => void,
  ) {}

  arm(at: number | null): void {
    clearTimeout(this.timer);
    if (at === null) return;
    this.timer = setTimeout(() => this.due(), Math.max(0, at - this.now()) + 1);
  }

  cancel(): void {
    clearTimeout(this.timer);
  }
}
