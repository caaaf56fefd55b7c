import { type IClientOptions, type MqttClient, connect } from 'mqtt';
import type { BrokerServer } from './server-list.ts';
import { type BrokerTarget, toMqttJsOptions } from './broker-target.ts';

/**
 * How long one server of a list has to answer CONNECT before the next is tried. A server that
 * swallows the SYN or never sends CONNACK (a host gone, a NATS node whose JetStream lost its
 * quorum: it closes such a connection after 4 s) would otherwise hold the client 10 s, past the
 * subscriber's 5 s first-connect window, and the next server would never get its turn. A live
 * broker answers in milliseconds.
 */
const LIST_CONNECT_TIMEOUT_MS = 3_000;

/**
 * An MQTT.js client for the long-lived connections (subscriber, heartbeat timer, runner). Kept
 * apart from broker-target.ts so that the one-shot publisher never loads MQTT.js.
 *
 * With several servers, MQTT.js's `servers` option moves each new connection to the next server
 * (round-robin, from the first). Its TLS stream builder, though, sets `servername` from the first
 * host and never again (connect/tls.js: `if (!opts.servername) opts.servername = opts.host`), so
 * the second node would be checked against the first node's name and refused as a TLS failure
 * that no retry fixes. Clearing it after each connection closes lets every server be checked
 * under its own name.
 */
export function connectMqtt(target: BrokerTarget, clientId: string, extra: Partial<IClientOptions>): MqttClient {
  const list = target.servers.length > 1 ? { connectTimeout: LIST_CONNECT_TIMEOUT_MS } : {};
  const client = connect({ ...toMqttJsOptions(target, clientId), ...list, ...extra });
  if (target.tls && target.servers.length > 1) {
    client.on('close', () => {
      delete client.options.servername;
    });
  }
  return client;
}

/** The server a client is connected (or connecting) to: MQTT.js writes it into its options. */
export function currentServer(client: MqttClient, target: BrokerTarget): BrokerServer {
  const { host, port } = client.options;
  return host !== undefined && port !== undefined ? { host, port } : { host: target.host, port: target.port };
}
