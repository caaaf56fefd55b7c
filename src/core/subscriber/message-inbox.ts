export interface InboundMessage {
  topic: string;
  payload: Buffer;
  retain: boolean;
}

/** Messages verified per turn of the event loop, so timers and the socket are served during a flood. */
const DRAIN_BATCH = 256;

/**
 * Messages held before the connection stops reading (`MAM_INBOX_MAX`). A signed event is under 2 KiB
 * on the wire, so the default bounds the queue near 20 MiB however large a burst is; below it a
 * burst costs no round trip at all.
 */
export const DEFAULT_INBOX_LIMIT = 10_000;

/**
 * Messages are queued on the network callback and handed on later, in batches: verification never
 * runs on the socket's callback, and every message of a batch arrived before the batch began (the
 * verifier checks each record once per batch on that ground).
 *
 * The queue is bounded: once it holds `limit` messages, `whenRoom` holds back the connection's
 * acknowledgement of the next one until the drain has brought the queue down to half. MQTT.js reads
 * no further packet meanwhile, so a burst waits in the socket and on the broker instead of in this
 * process's heap. The trade-off: a broker that caps a client's queue (Mosquitto's
 * `max_queued_messages`, 1000 by default) may drop QoS 1 messages beyond its cap while the monitor
 * catches up, where an unbounded inbox would have taken them into memory. See docs/cluster.md.
 */
export class MessageInbox {
  private readonly queue: InboundMessage[] = [];
  private readonly waiting: (() => void)[] = [];
  private draining = false;
  private closed = false;
  private batch = 0;

  constructor(
    private readonly handle: (msg: InboundMessage, batch: number) => void,
    /** Called after each batch, even one a handler threw in (the watch writes its lines there). */
    private readonly batchEnded: () => void,
    private readonly limit: number = DEFAULT_INBOX_LIMIT,
  ) {}

  /** Calls `next` at once while the queue has room, else once the drain has brought it down to half. */
  whenRoom(next: () => void): void {
    if (this.closed || this.queue.length < this.limit) next();
    else this.waiting.push(next);
  }

  /** Messages queued and not yet handed on. */
  get size(): number {
    return this.queue.length;
  }

  push(msg: InboundMessage): void {
    if (this.closed) return;
    this.queue.push(msg);
    this.schedule();
  }

  /** Drops what is queued and stops handing messages on. */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
    // Nothing is read after the watch ends; the held acknowledgement is moot.
    this.waiting.length = 0;
  }

  private schedule(): void {
    if (this.draining) return;
    this.draining = true;
    setImmediate(() => this.drain());
  }

  private drain(): void {
    this.draining = false;
    this.batch++;
    try {
      // One splice per batch: a shift() per message moved the whole backlog each time.
      for (const msg of this.queue.splice(0, DRAIN_BATCH)) {
        if (this.closed) break;
        this.handle(msg, this.batch);
      }
    } finally {
      this.batchEnded();
    }
    if (this.queue.length <= this.limit / 2) for (const next of this.waiting.splice(0)) next();
    if (this.queue.length > 0 && !this.closed) this.schedule();
  }
}
