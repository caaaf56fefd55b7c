import { randomBytes } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { Socket } from 'node:net';
import { onTestFinished } from 'vitest';

/** What a webhook does with its n-th request (1-based): answer 200, answer 500, or never answer. */
export type HookBehaviour = (n: number) => 'ok' | 'fail' | 'hang';

export interface HookRequest {
  n: number;
  /** Date.now() when the request's body was complete. */
  at: number;
  method: string;
  contentType: string | undefined;
  body: Record<string, any>;
  answered: 'ok' | 'fail' | 'hang';
}

export interface WebhookServer {
  /** `http://127.0.0.1:<port>/hooks/<secret>`: the secret path stands for a Slack/Discord token. */
  url: string;
  /** The secret part of the URL, to look for in logs. */
  secret: string;
  readonly requests: HookRequest[];
  /** Requests answered 2xx. */
  readonly delivered: HookRequest[];
  /** Requests still waiting for an answer (a `hang` one). */
  readonly hanging: number;
}

/**
 * A real webhook receiver on 127.0.0.1:0 (node:http), closed when the test ends: records every
 * request and answers as `behave` says, so a test can see the payload shape, the retries and
 * their spacing, and what a slow target does to the sender.
 */
export async function startWebhookServer(behave: HookBehaviour = () => 'ok'): Promise<WebhookServer> {
  const secret = `T0${randomBytes(10).toString('hex')}`;
  const requests: HookRequest[] = [];
  const open = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.setEncoding('utf8').on('data', (d: string) => (text += d));
    req.on('end', () => {
      const n = requests.length + 1;
      const answered = behave(n);
      let body: Record<string, any> = {};
      try {
        body = JSON.parse(text) as Record<string, any>;
      } catch {
        body = { unparsed: text };
      }
      requests.push({ n, at: Date.now(), method: req.method ?? '', contentType: req.headers['content-type'], body, answered });
      if (req.url !== `/hooks/${secret}`) return void res.writeHead(404).end();
      if (answered === 'hang') {
        open.add(res);
        res.on('close', () => open.delete(res));
        return;
      }
      res.writeHead(answered === 'ok' ? 200 : 500, { 'content-type': 'text/plain' }).end(answered);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  onTestFinished(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    url: `http://127.0.0.1:${port}/hooks/${secret}`,
    secret,
    requests,
    get delivered() {
      return requests.filter((r) => r.answered === 'ok');
    },
    get hanging() {
      return open.size;
    },
  };
}
