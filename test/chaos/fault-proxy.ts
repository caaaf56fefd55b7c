import { connect, createServer, type Socket } from 'node:net';

/**
 * A loopback TCP relay for network faults, like test/helpers/tcp-proxy.ts, with what the chaos
 * suite needs on top: resets (RST, not FIN), a stall of the current connections only (a dead path
 * that only keepalive can detect, while new connections flow), a count of accepted connections
 * (a reconnect shows up as one more), and lost PUBACKs (the broker has the message, the client
 * never hears it: the connection dies right then).
 */
export interface FaultProxy {
  readonly port: number;
  /** Client connections accepted so far (refused ones included). */
  readonly accepted: number;
  /** Connections currently relayed. */
  readonly connections: number;
  /** FIN both sides of every current connection. */
  cut(): void;
  /** RST both sides of every current connection. */
  reset(): void;
  /** While on, a new connection is reset as soon as it is accepted. */
  refuse(on: boolean): void;
  /** Current connections stop moving bytes either way (held, not lost); new ones are not affected. */
  stallCurrent(): void;
  /** Every connection, current and new, stops moving bytes until `release`. */
  stallAll(): void;
  release(): void;
  /** The next `n` PUBACKs from the broker are swallowed, and their connection reset on the spot. */
  losePubacks(n: number): void;
  readonly pubacksLost: number;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  stalled: boolean;
  /** Broker → client bytes not yet framed into whole MQTT packets. */
  pending: Buffer;
}

export function startFaultProxy(targetHost: string, targetPort: number): Promise<FaultProxy> {
  const pairs = new Set<Pair>();
  let accepted = 0;
  let refusing = false;
  let stallingAll = false;
  let pubacksToLose = 0;
  let pubacksLost = 0;

  const drop = (pair: Pair, hard: boolean) => {
    pairs.delete(pair);
    for (const s of [pair.client, pair.upstream]) {
      if (hard && !s.destroyed) s.resetAndDestroy();
      else s.destroy();
    }
  };
  const setFlowing = (pair: Pair, flowing: boolean) => {
    pair.stalled = !flowing;
    for (const s of [pair.client, pair.upstream]) {
      if (flowing) s.resume();
      else s.pause();
    }
  };

  const server = createServer((client) => {
    accepted++;
    if (refusing) {
      client.on('error', () => undefined);
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, targetHost);
    const pair: Pair = { client, upstream, stalled: false, pending: Buffer.alloc(0) };
    pairs.add(pair);
    client.on('data', (chunk: Buffer) => {
      if (!upstream.write(chunk)) client.pause();
    });
    upstream.on('drain', () => {
      if (!pair.stalled) client.resume();
    });
    upstream.on('data', (chunk: Buffer) => {
      pair.pending = Buffer.concat([pair.pending, chunk]);
      for (;;) {
        const size = packetSize(pair.pending);
        if (size === undefined || pair.pending.length < size) return;
        const packet = pair.pending.subarray(0, size);
        pair.pending = pair.pending.subarray(size);
        if (pubacksToLose > 0 && packet[0]! >> 4 === 4) {
          pubacksToLose--;
          pubacksLost++;
          drop(pair, true);
          return;
        }
        if (!client.write(packet)) upstream.pause();
      }
    });
    client.on('drain', () => {
      if (!pair.stalled) upstream.resume();
    });
    if (stallingAll) setFlowing(pair, false);
    for (const s of [client, upstream]) {
      s.on('error', () => drop(pair, false));
      s.on('close', () => drop(pair, false));
    }
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      const addr = server.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      resolve({
        port,
        get accepted() {
          return accepted;
        },
        get connections() {
          return pairs.size;
        },
        get pubacksLost() {
          return pubacksLost;
        },
        cut: () => [...pairs].forEach((p) => drop(p, false)),
        reset: () => [...pairs].forEach((p) => drop(p, true)),
        refuse: (on) => {
          refusing = on;
        },
        stallCurrent: () => pairs.forEach((p) => setFlowing(p, false)),
        stallAll: () => {
          stallingAll = true;
          pairs.forEach((p) => setFlowing(p, false));
        },
        release: () => {
          stallingAll = false;
          pairs.forEach((p) => setFlowing(p, true));
        },
        losePubacks: (n) => {
          pubacksToLose = n;
        },
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            [...pairs].forEach((p) => drop(p, false));
          }),
      });
    });
  });
}

/** Size of the MQTT packet at the start of `buf` (fixed header + remaining length), if known yet. */
function packetSize(buf: Buffer): number | undefined {
  let multiplier = 1;
  let length = 0;
  for (let i = 1; i <= 4; i++) {
    if (buf.length <= i) return undefined;
    const byte = buf[i]!;
    length += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) return 1 + i + length;
    multiplier *= 128;
  }
  throw new Error('fault proxy: malformed MQTT remaining length from the broker');
}
