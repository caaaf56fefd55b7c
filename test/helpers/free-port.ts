import { createServer } from 'node:net';

/**
 * A loopback TCP port that was free a moment ago. Another process may take it before the caller
 * binds it, so callers that spawn a server retry on "address in use" (see brokers.ts). Ports come
 * from the kernel's ephemeral range, so they never collide with the system brokers on 1883/4222.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}
