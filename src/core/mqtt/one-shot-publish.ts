import { createRequire } from 'node:module';
import net from 'node:net';
import type tlsModule from 'node:tls';
import mqttPacket from 'mqtt-packet';
import { BrokerRefusedConnection, BrokerUnreachable, classifyConnectionError } from './broker-errors.ts';
import type { BrokerTarget } from './broker-target.ts';
import { describeTarget } from './broker-target.ts';

/** node:tls is loaded only for an mqtts:// broker: most publishes are plain TCP, and tls costs ~1.5 ms of a start. */
const loadTls = (): typeof tlsModule => createRequire(import.meta.url)('node:tls') as typeof tlsModule;

export interface OutgoingMessage {
  topic: string;
  payload: string;
  retain: boolean;
}

export const CONNACK_TIMEOUT_MS = 10_000;
export const PUBACK_TIMEOUT_MS = 5_000;

/**
 * CONNECT → PUBLISH (QoS 1) × n → DISCONNECT on one fresh socket, through MQTT.js's own packet codec.
 * A one-shot publisher needs none of the full client's reconnect and store machinery, and loading
 * it is most of a short process's start-up; the subscriber and the heartbeat keep MQTT.js.
 *
 * `connect()` opens the socket and completes the CONNECT handshake; it may be started before the
 * payload exists, so that the network round-trips overlap the registry work.
 */
export class OneShotSession {
  private socket: net.Socket | undefined;
  private readonly parser = mqttPacket.parser({ protocolVersion: 4 });
  private waiters = new Map<string, (packet: mqttPacket.Packet) => void>();
  private failure: Error | undefined;
  private onFailure: ((err: Error) => void) | undefined;
  private pinger: NodeJS.Timeout | undefined;

  constructor(
    private readonly target: BrokerTarget,
    private readonly clientId: string,
  ) {
    // The cache is 65,536 pre-built buffers: ~60 ms of a process that sends four packets.
    mqttPacket.writeToStream.cacheNumbers = false;
  }

  connect(): Promise<void> {
    const { target } = this;
    return this.step('connack', CONNACK_TIMEOUT_MS, 'no CONNACK', () => {
      const socket = target.tls
        ? loadTls().connect({
            host: target.host,
            port: target.port,
            ca: target.tls.ca,
            cert: target.tls.cert,
            key: target.tls.key,
            servername: net.isIP(target.host) ? undefined : target.host,
          })
        : net.connect({ host: target.host, port: target.port });
      this.socket = socket;
      socket.setNoDelay(true);
      socket.on('data', (chunk) => this.parser.parse(chunk));
      socket.on('error', (err: NodeJS.ErrnoException) => this.fail(classifyConnectionError(target, err)));
      socket.on('close', () => this.fail(new BrokerUnreachable(describeTarget(target), 'connection closed by the broker')));
      this.parser.on('packet', (packet: mqttPacket.Packet) => this.dispatch(packet));
      this.parser.on('error', (err: Error) => this.fail(new BrokerUnreachable(describeTarget(target), `bad packet: ${err.message}`)));
      this.write({
        cmd: 'connect',
        protocolId: 'MQTT',
        protocolVersion: 4,
        clean: true,
        clientId: this.clientId,
        keepalive: target.keepalive,
        username: target.username,
        password: target.password === undefined ? undefined : Buffer.from(target.password, 'utf8'),
      });
    }).then((packet) => {
      const rc = (packet as mqttPacket.IConnackPacket).returnCode ?? 0;
      if (rc !== 0) throw new BrokerRefusedConnection(describeTarget(target), target.username, rc);
      this.keepAlive();
    });
  }

  /**
   * MQTT 3.1.1 §3.1.2.10: the client must send something within each keepalive period, or the
   * broker drops it after 1.5 periods. The session is opened before the registry work, which can
   * wait out a stale lock (5 s and more): without pings a low MQTT_KEEPALIVE loses the connection
   * before the PUBLISH and turns a reachable broker into exit 2.
   */
  private keepAlive(): void {
    const periodMs = this.target.keepalive * 1000;
    if (periodMs <= 0 || this.failure) return;
    this.pinger = setInterval(
      () => {
        if (!this.failure) this.write({ cmd: 'pingreq' });
      },
      Math.max(periodMs / 2, 100),
    );
    this.pinger.unref();
  }

  /**
   * Sends the messages at QoS 1 in order, each after the PUBACK of the one before. Sent back to
   * back, they cost 40 ms in most runs: the broker's second PUBACK waited in its Nagle buffer
   * (Mosquitto does not set TCP_NODELAY by default) for the ACK of its first, which this side's
   * kernel delays by up to 40 ms when it has nothing to send. Waiting costs one round trip instead.
   */
  async publish(messages: OutgoingMessage[]): Promise<void> {
    for (const [i, m] of messages.entries()) {
      const messageId = i + 1;
      await this.step(`puback:${messageId}`, PUBACK_TIMEOUT_MS, `no PUBACK for ${m.topic}`, () =>
        this.write({ cmd: 'publish', topic: m.topic, payload: m.payload, qos: 1, retain: m.retain, dup: false, messageId }),
      );
    }
  }

  /** DISCONNECT and close; never throws. */
  async end(): Promise<void> {
    const socket = this.socket;
    clearInterval(this.pinger);
    if (!socket || socket.destroyed) return;
    this.failure ??= new Error('ended');
    try {
      this.write({ cmd: 'disconnect' });
    } catch {
      // The socket may already be gone; nothing to tell the broker then.
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        socket.destroy();
        resolve();
      }, 1_000);
      socket.end(() => {
        clearTimeout(timer);
        socket.destroy();
        resolve();
      });
    });
  }

  /**
   * Through fail(): a step still waiting (the CONNACK of a server that swallowed the CONNECT) is
   * rejected and its timer cleared, so that nothing of the session outlives it in a long-lived
   * caller (the library API, a test running commands in-process).
   */
  destroy(): void {
    this.fail(new Error('destroyed'));
    this.socket?.destroy();
  }

  private write(packet: mqttPacket.Packet): void {
    this.socket!.write(mqttPacket.generate(packet, { protocolVersion: 4 }));
  }

  /** Registers a waiter for one reply packet before the request goes out, with its own deadline. */
  private step(key: string, timeoutMs: number, timeoutWhy: string, send: () => void): Promise<mqttPacket.Packet> {
    return new Promise((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      const timer = setTimeout(() => {
        this.waiters.delete(key);
        reject(new BrokerUnreachable(describeTarget(this.target), `${timeoutWhy} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const previous = this.onFailure;
      this.onFailure = (err) => {
        previous?.(err);
        clearTimeout(timer);
        reject(err);
      };
      this.waiters.set(key, (packet) => {
        clearTimeout(timer);
        resolve(packet);
      });
      send();
    });
  }

  private dispatch(packet: mqttPacket.Packet): void {
    const key = packet.cmd === 'puback' ? `puback:${packet.messageId}` : packet.cmd;
    const waiter = this.waiters.get(key);
    if (!waiter) return;
    this.waiters.delete(key);
    waiter(packet);
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    clearInterval(this.pinger);
    const notify = this.onFailure;
    this.onFailure = undefined;
    notify?.(err);
    this.socket?.destroy();
  }
}
