import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import { type BrokerError, SubscriptionRefused, classifyConnectionError } from '../mqtt/broker-errors.ts';
import { type BrokerTarget, describeTarget, newClientId, toMqttJsOptions } from '../mqtt/broker-target.ts';
import { OneShotSession } from '../mqtt/one-shot-publish.ts';

/** What the connection tells the watch; each callback is a fact, the watch decides what it means. */
export interface WatchConnectionEvents {
  /** CONNACK; `first` for the process's first connection. */
  connected(first: boolean, sessionPresent: boolean): void;
  /** The broker acknowledged the subscriptions, the first time. */
  subscribed(): void;
  message(topic: string, payload: Buffer, retain: boolean): void;
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
 * The subscriber's MQTT client: one process-unique session (clean=false, so QoS 1 events published
 * while the connection was cut are delivered after the reconnect), reconnects backed off from 0.5 s
 * to 8 s, the subscriptions restored on every CONNACK, and the session cleared on close (MQTT 3.1.1
 * has no session expiry: a broker would keep a dead process's queue forever).
 */
export class WatchConnection {
  private client: MqttClient | undefined;
  private everConnected = false;
  private subscribedOnce = false;
  private closed = false;
  private readonly clientId: string;

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
    const options: IClientOptions = { ...toMqttJsOptions(this.target, this.clientId), clean: false, reconnectPeriod: RECONNECT_MIN_MS, resubscribe: false };
    const client = connect(options);
    this.client = client;
    client.on('connect', (connack) => {
      client.options.reconnectPeriod = RECONNECT_MIN_MS;
      const first = !this.everConnected;
      this.everConnected = true;
      this.events.connected(first, connack.sessionPresent);
      this.subscribe(client);
    });
    client.on('message', (topic, payload, packet) => this.events.message(topic, payload, packet.retain));
    client.on('offline', () => this.lost());
    client.on('close', () => this.lost());
    client.on('reconnect', () => {
      client.options.reconnectPeriod = Math.min((client.options.reconnectPeriod ?? RECONNECT_MIN_MS) * 2, RECONNECT_MAX_MS);
    });
    client.on('error', (err: Error & { code?: number | string }) => {
      if (this.closed) return; // MQTT.js may report one failure more than once
      const failure = classifyConnectionError(this.target, err);
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
    const cleaner = new OneShotSession(this.target, this.clientId);
    try {
      await Promise.race([cleaner.connect().then(() => cleaner.end()), new Promise((r) => setTimeout(r, SESSION_CLEANUP_MS))]);
    } catch {
      // Broker gone: nothing to clean, and nothing to wait for.
    } finally {
      cleaner.destroy();
    }
  }

  private subscribe(client: MqttClient): void {
    client.subscribe(this.topics, { qos: 1 }, (err, granted) => {
      if (this.closed) return;
      if (err) {
        this.events.transientError(classifyConnectionError(this.target, err));
        return;
      }
      const refused = (granted ?? []).filter((g) => g.qos === 128).map((g) => g.topic);
      if (refused.length > 0) return this.fail(new SubscriptionRefused(this.broker, refused));
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
