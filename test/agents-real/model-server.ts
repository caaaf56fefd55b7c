import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { freePort } from '../helpers/free-port.ts';

/** One HTTP request a CLI made to the scripted model, as received. */
export interface RecordedRequest {
  method: string;
  /** Path and query (`/v1/messages?beta=true`). */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; undefined when there was none. */
  body: unknown;
}

export interface ModelServer {
  /** `http://127.0.0.1:<port>`: the base URL to hand the CLI. */
  url: string;
  port: number;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export type Handler = (request: RecordedRequest, res: ServerResponse) => void;

/** One server-sent event: `event:` (when named) and one `data:` line of JSON. */
export function sse(res: ServerResponse, data: unknown, event?: string): void {
  res.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`);
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/**
 * A model API on a free loopback port: real HTTP, every request recorded, answered by `handle`.
 * A response `handle` leaves open (a hang) is cut when the server closes, so no test leaks a socket.
 */
export async function startModelServer(handle: Handler): Promise<ModelServer> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        body = text;
      }
      const request: RecordedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body };
      requests.push(request);
      try {
        handle(request, res);
      } catch (err) {
        json(res, 500, { error: { message: `scripted model server: ${(err as Error).message}` } });
      }
    });
  });
  // A port another process took between freePort() and listen(): try another.
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const listening = await new Promise<boolean>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' && attempt < 5 ? resolve(false) : reject(err)));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (!listening) continue;
    return {
      url: `http://127.0.0.1:${port}`,
      port,
      requests,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }
}
