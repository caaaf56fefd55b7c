import type { MqttClient } from 'mqtt';
import { type BrokerError, BrokerUnreachable, SubscriptionRefused, classifyConnectionError } from '../mqtt/broker-errors.ts';
import { type BrokerTarget, describeTarget, newClientId } from '../mqtt/broker-target.ts';
import { connectMqtt, currentServer } from '../mqtt/mqtt-client.ts';
import { OneShotSession } from '../mqtt/one-shot-publish.ts';
import { monotonicMs } from '../monotonic.ts';

/** What the connection tells the watch; each callback is a fact, the watch decides what it means. */
export interface WatchConnectionEvents {
  /** CONNACK; `first` for the process's first connection. */
  connected(first: boolean, sessionPresent: boolean): void;
  /** The broker acknowledged the subscriptions, the first time. */
  subscribed(): void;
  message(topic: string, payload: Buffer, retain: boolean): void;
  /**
   * Asked after each message: MQTT.js acknowledges it and reads the next packet only once `next` is
   * called, so a watch whose inbox is full holds a burst back in the socket and on the broker.
   */
  admit?(next: () => void): void;
  /** A connection attempt failed or the connection was lost; MQTT.js tries again. */
  lost(): void;
  /** A failure no retry can fix (refused CONNACK, TLS trust, a denied subscription). */
  failed(err: BrokerError): void;
  /** Transient errors, for the debug log. */
  transientError(err: BrokerError): void;
}

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 8_000;
/** Clearing the session on exit is a courtesy to the broker; it never holds the process up longer. */
const SESSION_CLEANUP_MS = 2_000;
/**
 * How long the broker has to acknowledge the subscriptions. NATS 2.9 sends no SUBACK when creating a
 * subscription's JetStream consumer times out (4 s per filter; seen on the nodes that survive a
 * crash, "Unable to add JetStream consumer for subscription … timeout"), and the watch would wait
 * forever on a connection that otherwise looks healthy. Dropping it makes MQTT.js reconnect — to the
 * next server of a list — and the subscriptions are asked for again on the new CONNACK.
 */
const SUBACK_TIMEOUT_MS = 12_000;
/**
 * SUBACK refusals (0x80) in a row before the watch gives up. A permission refuses every time; but
 * NATS also refuses when the subscription's JetStream consumer could not be created in time (a node
 * of the cluster just lost, its streams electing leaders), and a later try — after a reconnect, on
 * the next server of a list — gets past that. Three tries cost a denied watch about 4 s more.
 */
const SUBACK_REFUSALS_MAX = 3;
/**
 * A refusal the server took this long to decide is a cluster still settling, not a permission: NATS
 * refuses a subscription whose JetStream consumer it could not create within 4 s, while a denied
 * topic is refused at once. Seen in the 3-node failover suite: three such refusals in a row, 4 s
 * each, after `recovered()` (the stream leaders elected, a probe round trip on every node), and the
 * cluster answered again seconds later.
 */
const SLOW_REFUSAL_MS = 2_000;
/** Slow refusals in a row before the watch gives up: about 50 s with the reconnect back-off. */
const SLOW_REFUSALS_MAX = 6;

/**
 * The subscriber's MQTT client: one process-unique session (clean=false, so QoS 1 events published
 * while the connection was cut are delivered after the reconnect), reconnects backed off from 0.5 s
 * to 8 s, the subscriptions restored on every CONNACK, and the session cleared on close (MQTT 3.1.1
 * has no session expiry: a broker would keep a dead process's queue forever). With several servers
 * each reconnect goes to the next one; on a cluster the session (and its queued QoS 1 messages)
 * lives in replicated JetStream streams, so the next node resumes it (docs/cluster.md).
 */
export class WatchConnection {
  private client: MqttClient | undefined;
  private everConnected = false;
  private subscribedOnce = false;
  private closed = false;
  private refusals = 0;
  private slowRefusals = 0;
  /** The socket is corked until MQTT.js has handled what one read brought (see `holdAcks`). */
  private acksHeld = false;
  private readonly clientId: string;
  /** Where the last CONNACK came from: the node that holds the session to clear on close. */
  private sessionServer: BrokerTarget | undefined;

  constructor(
    private readonly target: BrokerTarget,
    private readonly topics: string[],
    private readonly events: WatchConnectionEvents,
  ) {
    this.clientId = newClientId(target, 'sub');
  }

  /** `mqtt://host:port`, for messages. */
  get broker(): string {
    return describeTarget(this.target);
  }

  open(): void {
    const client = connectMqtt(this.target, this.clientId, { clean: false, reconnectPeriod: RECONNECT_MIN_MS, resubscribe: false });
    this.client = client;
    client.on('connect', (connack) => {
      client.options.reconnectPeriod = RECONNECT_MIN_MS;
      this.sessionServer = this.serverTarget(client);
      const first = !this.everConnected;
      this.everConnected = true;
      this.events.connected(first, connack.sessionPresent);
      this.subscribe(client);
    });
    client.on('message', (topic, payload, packet) => {
      this.holdAcks(client);
      this.events.message(topic, payload, packet.retain);
    });
    const admit = this.events.admit;
    if (admit) client.handleMessage = (_packet, done) => admit(done);
    client.on('offline', () => this.lost());
    client.on('close', () => this.lost());
    client.on('reconnect', () => {
      client.options.reconnectPeriod = Math.min((client.options.reconnectPeriod ?? RECONNECT_MIN_MS) * 2, RECONNECT_MAX_MS);
    });
    client.on('error', (err: Error & { code?: number | string }) => {
      if (this.closed) return; // MQTT.js may report one failure more than once
      // Named by the server that failed: a refusal by one node of a list is that node's answer.
      const failure = classifyConnectionError(this.serverTarget(client), err);
      if (failure.transient) this.events.transientError(failure);
      else this.fail(failure);
    });
  }

  /** Ends the connection and clears the session: a clean-session CONNECT with the same client id discards it. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    if (!client) return;
    await new Promise<void>((resolve) => client.end(true, {}, () => resolve()));
    if (!this.everConnected) return;
    const cleaner = new OneShotSession(this.sessionServer ?? this.target, this.clientId);
    try {
      await Promise.race([cleaner.connect().then(() => cleaner.end()), new Promise((r) => setTimeout(r, SESSION_CLEANUP_MS))]);
    } catch {
      // Broker gone: nothing to clean, and nothing to wait for.
    } finally {
      cleaner.destroy();
    }
  }

  /**
   * MQTT.js writes each PUBACK on its own (it corks the socket for one packet only): a writev and
   * a TCP segment per message, about 5% of a monitor's time in a flood. The socket stays corked while
   * MQTT.js works through what one read brought (its packets follow each other on process.nextTick,
   * and microtasks run only once that queue is empty), so their acknowledgements leave in one write,
   * as soon as the last is written and before any of them is verified.
   */
  private holdAcks(client: MqttClient): void {
    if (this.acksHeld) return;
    const stream = client.stream;
    this.acksHeld = true;
    stream.cork();
    queueMicrotask(() => {
      this.acksHeld = false;
      stream.uncork();
    });
  }

  private serverTarget(client: MqttClient): BrokerTarget {
    const server = currentServer(client, this.target);
    return { ...this.target, host: server.host, port: server.port, servers: [server] };
  }

  private subscribe(client: MqttClient): void {
    const stream = client.stream;
    const watchdog = setTimeout(() => {
      // Only this connection's SUBSCRIBE: after a reconnect the new one has its own watchdog.
      if (this.closed || client.stream !== stream) return;
      this.events.transientError(new BrokerUnreachable(describeTarget(this.serverTarget(client)), `no SUBACK within ${SUBACK_TIMEOUT_MS / 1000} s`));
      stream.destroy();
    }, SUBACK_TIMEOUT_MS);
    watchdog.unref();
    const asked = monotonicMs();
    client.subscribe(this.topics, { qos: 1 }, (err, _subs, suback) => {
      clearTimeout(watchdog);
      if (this.closed) return;
      // MQTT.js reports a refused filter as an error carrying the SUBACK; a lost connection without one.
      const codes = suback?.granted ?? [];
      const refused = this.topics.filter((_, i) => ((codes[i] as number | undefined) ?? 0) >= 0x80);
      if (refused.length > 0) {
        const failure = new SubscriptionRefused(describeTarget(this.serverTarget(client)), refused);
        const slow = monotonicMs() - asked >= SLOW_REFUSAL_MS;
        if (slow ? ++this.slowRefusals >= SLOW_REFUSALS_MAX : ++this.refusals >= SUBACK_REFUSALS_MAX) return this.fail(failure);
        this.events.transientError(failure);
        stream.destroy(); // reconnect, and ask again on the next CONNACK
        return;
      }
      if (err) {
        this.events.transientError(classifyConnectionError(this.target, err));
        return;
      }
      this.refusals = 0;
      this.slowRefusals = 0;
      if (this.subscribedOnce) return;
      this.subscribedOnce = true;
      this.events.subscribed();
    });
  }

  private lost(): void {
    if (!this.closed) this.events.lost();
  }

  private fail(err: BrokerError): void {
    this.closed = true;
    this.events.failed(err);
  }
}
