export interface InboundMessage {
  topic: string;
  payload: Buffer;
  retain: boolean;
}

/** Messages verified per turn of the event loop, so timers and the socket are served during a flood. */
const DRAIN_BATCH = 256;

/**
 * Messages are queued on the network callback and handed on later, in batches: verification never
 * runs on the socket's callback, and every message of a batch arrived before the batch began (the
 * verifier checks each record once per batch on that ground).
 */
export class MessageInbox {
  private readonly queue: InboundMessage[] = [];
  private draining = false;
  private closed = false;
  private batch = 0;

  constructor(
    private readonly handle: (msg: InboundMessage, batch: number) => void,
    /** Called after each batch, even one a handler threw in (the watch writes its lines there). */
    private readonly batchEnded: () => void,
  ) {}

  push(msg: InboundMessage): void {
    if (this.closed) return;
    this.queue.push(msg);
    this.schedule();
  }

  /** Drops what is queued and stops handing messages on. */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
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
    if (this.queue.length > 0 && !this.closed) this.schedule();
  }
}
