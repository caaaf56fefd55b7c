import { connect, createServer, type Socket } from 'node:net';

/**
 * A loopback TCP relay between clients and a broker, for fault tests: the broker stays up while the
 * network between it and a client misbehaves.
 */
export interface TcpProxy {
  readonly port: number;
  /** Number of client connections currently relayed. */
  readonly connections: number;
  /** Destroy every current connection (both sides); new connections are still accepted. */
  cut(): void;
  /** Refuse service: new connections are accepted and dropped at once. Existing ones are kept. */
  pause(): void;
  resume(): void;
  /** Black hole: sockets stay open but no byte moves either way (held, not lost, until unstall). */
  stall(): void;
  unstall(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
}

export function startTcpProxy(targetHost: string, targetPort: number, listenHost = '127.0.0.1'): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let paused = false;
  let stalled = false;

  const server = createServer((client) => {
    if (paused) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, targetHost);
    const pair = { client, upstream };
    pairs.add(pair);
    relay(client, upstream, () => stalled);
    relay(upstream, client, () => stalled);
    if (stalled) setFlowing(pair, false);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) {
      s.on('error', drop);
      s.on('close', drop);
    }
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, listenHost, () => {
      server.off('error', reject);
      const addr = server.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      resolve({
        port,
        get connections() {
          return pairs.size;
        },
        cut() {
          for (const p of [...pairs]) {
            p.client.destroy();
            p.upstream.destroy();
          }
          pairs.clear();
        },
        pause() {
          paused = true;
        },
        resume() {
          paused = false;
        },
        stall() {
          stalled = true;
          for (const p of pairs) setFlowing(p, false);
        },
        unstall() {
          stalled = false;
          for (const p of pairs) setFlowing(p, true);
        },
        close() {
          return new Promise<void>((done) => {
            server.close(() => done());
            for (const p of pairs) {
              p.client.destroy();
              p.upstream.destroy();
            }
            pairs.clear();
          });
        },
      });
    });
  });
}

// Manual relay instead of pipe(): pipe() resumes the source on 'drain', which would undo a stall.
function relay(from: Socket, to: Socket, isStalled: () => boolean): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk)) from.pause();
  });
  to.on('drain', () => {
    if (!isStalled()) from.resume();
  });
}

function setFlowing(pair: Pair, flowing: boolean): void {
  for (const s of [pair.client, pair.upstream]) {
    if (flowing) s.resume();
    else s.pause();
  }
}
