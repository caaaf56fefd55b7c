import { mkdir } from 'node:fs/promises';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { createRequire } from 'node:module';
import { timingSafeEqual } from 'node:crypto';
import { MamError } from '../errors.ts';

/** Pino-compatible subset; `mam broker` passes its pino logger, tests pass spies. */
export interface BrokerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface EmbeddedBrokerOptions {
  host?: string;
  /** 0 lets the OS pick; the chosen port is in the result. */
  port: number;
  /** MQTT over WebSocket (path `/`, like mosquitto's `protocol websockets`). */
  wsPort?: number;
  /** Level DB folder: retained messages and persistent sessions survive a restart. */
  dataDir?: string;
  logger?: BrokerLogger;
  /** When set, every CONNECT must carry exactly these credentials. */
  auth?: { username: string; password: string };
}

export interface EmbeddedBroker {
  host: string;
  port: number;
  wsPort?: number;
  close(): Promise<void>;
}

// ws, level and aedes-persistence-level stay out of the bundles (native code, optional parts) and
// are CommonJS packages: loaded with require, which works alike from the sources and the bundles,
// where a dynamic import() would need the ESM loader in the middle of bin/load-bundle.cjs's script.
const requireDependency = createRequire(import.meta.url);

// The handshake of a client that never sends CONNECT is bounded so a stuck peer cannot hold a slot.
const CONNECT_TIMEOUT_MS = 10_000;
// aedes.close() ends clients politely; a peer that never reads must not make close() hang.
const BROKER_CLOSE_GRACE_MS = 2_000;
// How long one publish may hold the others back (see serializePublishes).
const PUBLISH_SLOT_MS = 5_000;

export async function startEmbeddedBroker(opts: EmbeddedBrokerOptions): Promise<EmbeddedBroker> {
  const host = opts.host ?? '127.0.0.1';
  const log = opts.logger;
  const db = opts.dataDir === undefined ? undefined : await openDb(opts.dataDir);
  const cleanups: Array<() => Promise<void>> = [];
  if (db) cleanups.push(() => db.destroy());

  try {
    // Lazy: `mam` subcommands other than `broker` never pay for loading aedes.
    const { Aedes } = await import('aedes');
    const broker = await Aedes.createBroker({
      persistence: db,
      connectTimeout: CONNECT_TIMEOUT_MS,
      ...(opts.auth ? { authenticate: makeAuthenticate(opts.auth, log) } : {}),
    });
    cleanups.unshift(() => withTimeout(new Promise<void>((r) => broker.close(() => r())), BROKER_CLOSE_GRACE_MS));
    serializePublishes(broker as unknown as { publish: Publish }, log);

    broker.on('clientReady', (c) => log?.info({ client_id: c.id }, 'client connected'));
    broker.on('clientDisconnect', (c) => log?.info({ client_id: c.id }, 'client disconnected'));
    broker.on('clientError', (c, err) => log?.warn({ client_id: c.id, err: err.message }, 'client error'));
    broker.on('connectionError', (c, err) => log?.warn({ client_id: c.id, err: err.message }, 'connection refused'));

    const sockets = new Set<Socket>();
    const tcp = createServer((s) => broker.handle(s));
    track(tcp, sockets);
    const port = await listen(tcp, host, opts.port);
    cleanups.unshift(() => closeServer(tcp, sockets));

    let wsPort: number | undefined;
    if (opts.wsPort !== undefined) {
      const ws = requireDependency('ws') as typeof import('ws');
      const http = createHttpServer();
      const wsSockets = new Set<Socket>();
      track(http, wsSockets);
      const wss = new ws.WebSocketServer({ server: http });
      wss.on('connection', (socket, req) => broker.handle(ws.createWebSocketStream(socket), req));
      // The http server reports bind errors through listen(); ws re-emits them here.
      wss.on('error', () => {});
      wsPort = await listen(http, host, opts.wsPort);
      cleanups.unshift(async () => {
        wss.close();
        await closeServer(http, wsSockets);
      });
    }

    log?.info({ host, port, ws_port: wsPort, data_dir: opts.dataDir }, 'broker listening');
    let closing: Promise<void> | undefined;
    return {
      host,
      port,
      ...(wsPort === undefined ? {} : { wsPort }),
      close: () => (closing ??= runAll(cleanups)),
    };
  } catch (err) {
    await runAll(cleanups);
    throw err;
  }
}

async function openDb(dataDir: string) {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const { Level } = requireDependency('level') as typeof import('level');
  const aedesPersistenceLevel = requireDependency('aedes-persistence-level') as typeof import('aedes-persistence-level').default;
  const db = new Level<string, Buffer>(dataDir);
  try {
    await db.open();
  } catch (err) {
    // LevelDB holds an exclusive lock: a second broker on the same folder is the usual cause.
    const cause = (err as { cause?: { code?: string } }).cause;
    if (cause?.code === 'LEVEL_LOCKED') throw new MamError(`data dir ${dataDir} is in use by another broker`);
    throw new MamError(`data dir ${dataDir}: cannot open the broker database (${(err as Error).message})`);
  }
  return aedesPersistenceLevel(db);
}

type Publish = (packet: unknown, client: unknown, done?: (err?: Error) => void) => void;

/**
 * aedes handles the packets of one TCP read concurrently, and with a disk persistence the steps of
 * a publish (store the retained message, queue it for persistent sessions) finish in any order.
 * Measured with aedes 1.2 and aedes-persistence-level: messages then reach subscribers out of
 * order, and aedes' duplicate filter (per subscriber, the highest broker counter seen so far)
 * silently DROPS the one that was overtaken — typically a terminal event, overtaken by the retained
 * state its publisher sent right behind it. So publishes run one at a time, in arrival order; one
 * that takes longer than PUBLISH_SLOT_MS (a subscriber that stopped reading) no longer holds the
 * rest back. A single machine's MAM traffic is far below what this costs.
 */
function serializePublishes(broker: { publish: Publish }, log: BrokerLogger | undefined): void {
  const publish: Publish = broker.publish.bind(broker);
  let tail: Promise<void> = Promise.resolve();
  broker.publish = (packet, client, done) => {
    // aedes' own signature: publish(packet, done) or publish(packet, client, done).
    const [who, cb] = typeof client === 'function' ? [null, client as (err?: Error) => void] : [client, done];
    const previous = tail;
    let release!: () => void;
    tail = new Promise<void>((r) => (release = r));
    void previous.then(() => {
      const slot = setTimeout(() => {
        log?.warn({ topic: (packet as { topic?: string }).topic }, 'publish still in progress; later ones proceed');
        release();
      }, PUBLISH_SLOT_MS);
      slot.unref(); // a safety net only: it must not keep a closing process alive
      publish(packet, who, (err) => {
        clearTimeout(slot);
        release();
        cb?.(err);
      });
    });
  };
}

function makeAuthenticate(auth: { username: string; password: string }, log: BrokerLogger | undefined) {
  const want = Buffer.from(`${auth.username}\0${auth.password}`);
  return (
    client: { id: string },
    username: string | undefined,
    password: Buffer | undefined,
    done: (err: (Error & { returnCode: number }) | null, ok: boolean | null) => void,
  ) => {
    const got = Buffer.from(`${username ?? ''}\0${password?.toString() ?? ''}`);
    // Constant-time when lengths match; a length mismatch reveals nothing beyond the length.
    const ok = got.length === want.length && timingSafeEqual(got, want);
    if (ok) return done(null, true);
    log?.warn({ client_id: client.id, username: username ?? null }, 'auth refused');
    // 4 = CONNACK "bad user name or password" (MQTT 3.1.1 §3.2.2.3).
    done(Object.assign(new Error('bad username or password'), { returnCode: 4 }), null);
  };
}

function track(server: Server | HttpServer, sockets: Set<Socket>): void {
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
}

function listen(server: Server | HttpServer, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(new MamError(`port ${port} on ${host} is already in use`));
      else reject(new MamError(`cannot listen on ${host}:${port} (${err.code ?? err.message})`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr !== null ? addr.port : port);
    });
  });
}

function closeServer(server: Server | HttpServer, sockets: Set<Socket>): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    // server.close() waits for every connection to end; destroying them is what keeps close() bounded.
    server.close(() => resolve());
    for (const s of sockets) s.destroy();
  });
}

async function runAll(steps: Array<() => Promise<void>>): Promise<void> {
  for (const step of steps) {
    try {
      await step();
    } catch {
      // Shutdown is best effort: one failing step must not leave the DB lock or a port held.
    }
  }
}

function withTimeout(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<void>((r) => (timer = setTimeout(r, ms)));
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
