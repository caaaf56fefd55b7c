import type { IncomingMessage, ServerResponse } from 'node:http';

/** A client that has not read this much of what was sent is dropped; its browser reconnects and gets a fresh snapshot. */
export const MAX_CLIENT_BACKLOG_BYTES = 4 * 1024 * 1024;
/** Clients at most: each holds a socket and a backlog. */
export const MAX_CLIENTS = 200;
/** How long the browser waits before it reconnects (the `retry` field). */
const RETRY_MS = 2_000;

export interface SseMessage {
  event: string;
  data: unknown;
}

/**
 * Server-Sent Events to every open page: one stream per page, one serialization per message. The
 * browser's EventSource reconnects by itself; every (re)connection starts with a snapshot, so a
 * page never has to guess what it missed. A slow page's backlog is bounded: past it, the page is
 * dropped rather than the server growing.
 */
export class SseHub {
  readonly #clients = new Set<ServerResponse>();
  #seq = 0;

  get size(): number {
    return this.#clients.size;
  }

  open(req: IncomingMessage, res: ServerResponse, snapshot: () => SseMessage): void {
    if (this.#clients.size >= MAX_CLIENTS) {
      res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8', 'Retry-After': '5' }).end('too many open pages\n');
      return;
    }
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      // A reverse proxy (nginx) must not hold the stream back.
      'X-Accel-Buffering': 'no',
    });
    req.socket.setNoDelay(true);
    res.write(`retry: ${RETRY_MS}\n\n`);
    res.write(this.#frame(snapshot()));
    this.#clients.add(res);
    const drop = () => this.#clients.delete(res);
    res.on('close', drop);
    res.on('error', drop);
  }

  broadcast(message: SseMessage): void {
    if (this.#clients.size === 0) return;
    const frame = this.#frame(message);
    for (const res of this.#clients) this.#send(res, frame);
  }

  /** A comment line: keeps proxies and idle sockets from closing a quiet stream. */
  ping(): void {
    for (const res of this.#clients) this.#send(res, ': ping\n\n');
  }

  close(): void {
    for (const res of this.#clients) res.end();
    this.#clients.clear();
  }

  #send(res: ServerResponse, frame: string): void {
    if (res.writableLength > MAX_CLIENT_BACKLOG_BYTES) {
      this.#clients.delete(res);
      res.destroy();
      return;
    }
    res.write(frame);
  }

  #frame(message: SseMessage): string {
    // JSON.stringify escapes newlines inside strings, so the data is one `data:` line.
    return `id: ${++this.#seq}\nevent: ${message.event}\ndata: ${JSON.stringify(message.data)}\n\n`;
  }
}
