import { type Socket, connect, createServer } from 'node:net';

export interface SlowLink {
  port: number;
  close(): Promise<void>;
}

/**
 * A loopback relay that holds every chunk for `delayMs` in each direction, order kept. Put only the
 * heartbeat timer behind it: its beats then spend a while between "seq taken" and "broker has it",
 * which is exactly the window in which a terminal published on a direct link could overtake them
 * if the terminal publish did not drain the timer first.
 */
export function startSlowLink(targetPort: number, delayMs: number): Promise<SlowLink> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        // Bytes still held are delivered before the close goes through: a peer that wrote and then
        // died (SIGKILL) still gets its last packets to the broker, as the kernel would.
        setTimeout(() => (s === client ? upstream : client).end(), delayMs + 5);
      });
    }
    const delayed = (from: Socket, to: Socket) => from.on('data', (chunk: Buffer) => setTimeout(() => to.writable && to.write(chunk), delayMs));
    delayed(client, upstream);
    delayed(upstream, client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      resolve({
        port: typeof addr === 'object' && addr !== null ? addr.port : 0,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
