// Baseline: the Node floor for what one `mam-publish` does on the wire, built from the stack's own
// wire library — mqtt-packet on a socket: CONNECT, an event and a retained state at QoS 1 (each
// sent after the PUBACK before it, as mam-publish does), DISCONNECT. No registry, no signing, no
// CLI. bench/run.mjs bundles it as scripts/build.mjs bundles a bin and starts it through
// bin/load-bundle.cjs, so it gets the same code cache: what no Node publisher can go below.
'use strict';
const net = require('node:net');
const mqttPacket = require('mqtt-packet');

mqttPacket.writeToStream.cacheNumbers = false; // as in src/core/mqtt/one-shot-publish.ts
const [host, port] = [process.argv[2], Number(process.argv[3])];
const socket = net.connect(port, host);
socket.setNoDelay(true);
const parser = mqttPacket.parser({ protocolVersion: 4 });
const send = (packet) => socket.write(mqttPacket.generate(packet, { protocolVersion: 4 }));
socket.on('data', (d) => parser.parse(d));
send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: `bench-floor-${process.pid}`, keepalive: 10 });
parser.on('packet', (p) => {
  if (p.cmd === 'connack') send({ cmd: 'publish', topic: 'bench/floor/events', payload: '{"seq":1}', qos: 1, messageId: 1 });
  else if (p.cmd === 'puback' && p.messageId === 1)
    send({ cmd: 'publish', topic: 'bench/floor/state', payload: '{"seq":1}', qos: 1, retain: true, messageId: 2 });
  else if (p.cmd === 'puback') {
    send({ cmd: 'disconnect' });
    socket.end();
  }
});
