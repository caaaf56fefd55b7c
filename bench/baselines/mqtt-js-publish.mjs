// Baseline: the smallest MQTT.js program doing what one `mam-publish` does on the wire —
// connect, two QoS 1 publishes (an event, then a retained state), disconnect.
import { connectAsync } from 'mqtt';

const [host, port] = [process.argv[2], Number(process.argv[3])];
const client = await connectAsync({ host, port, protocolVersion: 4, clean: true });
await client.publishAsync('bench/mqttjs/events', '{"seq":1}', { qos: 1 });
await client.publishAsync('bench/mqttjs/state', '{"seq":1}', { qos: 1, retain: true });
await client.endAsync();
