import type { MamConfig } from '../config/config.ts';
import type { Logger } from '../log.ts';
import type { Registry } from '../registry/registry.ts';
import { Subscriber } from '../subscriber/subscriber.ts';

export type BrokerState = 'connecting' | 'live' | 'down';

export interface BrokerStatus {
  state: BrokerState;
  /** `mqtt://host:port`, once known. */
  broker?: string | undefined;
  /** Why it is down, in one line. */
  message?: string | undefined;
}

export interface LiveFeedEvents {
  /** A verified event, or a state the watch resolved a job with (`event` null). */
  accepted(jobId: string, event: string | null, payload: unknown): void;
  rejected(rejection: { topic: string; reason: string; jobId?: string | undefined; seq?: number | undefined }): void;
  status(status: BrokerStatus): void;
}

const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** Restarts asked for in a burst (several redispatches) are taken together. */
const RESTART_DEBOUNCE_MS = 1_000;

/**
 * The broker side of the dashboard: `mam-subscribe --all`'s watch (the same verifier, so only
 * events signed with the job's token and of its current attempt get through), run again after
 * it ends. A monitor's watch ends only when the broker cannot be reached at start or refuses it;
 * the dashboard then keeps serving the registry and tries again, backing off to 30 s.
 */
export class LiveFeed {
  #closed = false;
  #stopCurrent: (() => void) | undefined;
  #wake: (() => void) | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  #loop: Promise<void> | undefined;

  constructor(
    private readonly config: MamConfig,
    private readonly registry: Registry,
    private readonly log: Logger,
    private readonly events: LiveFeedEvents,
  ) {}

  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * Starts a fresh watch. A monitor's watch treats a job it saw end as ended for good, so after a
   * redispatch it would ignore the new attempt's events; a fresh watch takes them (retained
   * messages of the old attempt are refused by the verifier as stale).
   */
  restart(): void {
    if (this.#closed || this.#restartTimer) return;
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      this.#stopCurrent?.();
    }, RESTART_DEBOUNCE_MS);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    this.#stopCurrent?.();
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    let backoff = RETRY_MIN_MS;
    while (!this.#closed) {
      const stopSignal = new Promise<void>((resolve) => (this.#stopCurrent = resolve));
      this.events.status({ state: 'connecting' });
      let broker: string | undefined;
      const subscriber = new Subscriber(
        this.config,
        this.registry,
        {
          jobIds: [],
          all: true,
          flags: {},
          remote: false,
          write: () => undefined,
          format: () => '',
          log: this.log,
          stopSignal,
          onSubscribed: (info) => {
            broker = info.broker;
            backoff = RETRY_MIN_MS;
            this.events.status({ state: 'live', broker });
          },
          onConnection: (up) => {
            if (!up) this.events.status({ state: 'down', broker, message: 'connection lost; reconnecting' });
            else if (broker) this.events.status({ state: 'live', broker });
          },
          onPrinted: (jobId, event, payload) => this.events.accepted(jobId, event, payload),
          onRejected: (r) => this.events.rejected(r),
        },
        [],
      );
      let message: string;
      try {
        const outcome = await subscriber.run();
        if (outcome.reason === 'stopped') continue; // a restart, or the close
        message = outcome.failure?.message ?? `broker ${outcome.broker} unreachable`;
        broker = outcome.broker;
      } catch (err) {
        message = (err as Error).message;
      }
      if (this.#closed) break;
      this.events.status({ state: 'down', broker, message });
      this.log.warn({ broker, err: message, retryMs: backoff }, 'dashboard: broker watch ended; retrying');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoff);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      backoff = Math.min(backoff * 2, RETRY_MAX_MS);
    }
  }
}
