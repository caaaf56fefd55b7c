import { connect as tcpConnect } from 'node:net';
import { generate, parser, type Packet } from 'mqtt-packet';

/**
 * A raw MQTT 3.1.1 session, used to record in which order a broker sends packets on the wire
 * (MQTT.js callbacks cannot tell whether a retained PUBLISH came before the SUBACK).
 * Returns a line per packet received after CONNACK, e.g. `publish qos=1 retain=true topic=a/b`.
 */
export async function subscribeAndRecord(port: number, filter: string, opts: { waitMs?: number; clientId?: string } = {}): Promise<string[]> {
  const socket = tcpConnect(port, '127.0.0.1');
  const p = parser({ protocolVersion: 4 });
  const seen: string[] = [];
  let connack: () => void = () => {};
  const connacked = new Promise<void>((r) => (connack = r));
  p.on('packet', (pkt: Packet) => {
    if (pkt.cmd === 'connack') return connack();
    if (pkt.cmd === 'publish') {
      seen.push(`publish qos=${pkt.qos} retain=${pkt.retain} topic=${pkt.topic}`);
      // Acknowledge so the broker does not redeliver within the observation window.
      if (pkt.qos === 1 && pkt.messageId !== undefined) socket.write(generate({ cmd: 'puback', messageId: pkt.messageId }));
    } else if (pkt.cmd === 'suback') {
      seen.push(`suback granted=${JSON.stringify(pkt.granted)}`);
    } else {
      seen.push(pkt.cmd);
    }
  });
  socket.on('data', (d) => p.parse(d));
  socket.on('error', () => {});
  await new Promise<void>((r, j) => socket.once('connect', r).once('error', j));
  socket.write(
    generate({
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: 4,
      clean: true,
      keepalive: 30,
      clientId: opts.clientId ?? `mam-wire-${process.pid}-${Date.now() % 100_000}`,
    }),
  );
  await connacked;
  socket.write(generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: filter, qos: 1 }] }));
  await new Promise((r) => setTimeout(r, opts.waitMs ?? 500));
  socket.write(generate({ cmd: 'disconnect' }));
  socket.end();
  return seen;
}
