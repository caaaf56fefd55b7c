import { connect as tcpConnect } from 'node:net';
import type { MqttClient } from 'mqtt';
import { beforeAll, expect, it } from 'vitest';
import { describeWithBroker } from '../helpers/brokers.ts';
import { startDockerNats, type DockerNatsBroker } from '../helpers/docker-brokers.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';

// What docker/README.md says about NATS, checked against the server running our config.

/** The core NATS protocol: CONNECT with a user, then PING; returns the server's answer line. */
function coreConnect(port: number, user: string, pass: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect(port, '127.0.0.1');
    let buf = '';
    let sent = false;
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      buf += d;
      if (!sent && buf.startsWith('INFO ')) {
        sent = true;
        s.write(`CONNECT ${JSON.stringify({ user, pass, verbose: false })}\r\nPING\r\n`);
      }
      const answer = /^(PONG|-ERR .*)$/m.exec(buf);
      if (answer) {
        s.destroy();
        resolve(answer[1]!.trim());
      }
    });
    s.on('error', reject);
  });
}

/** Publishes `topic` and reports whether a PUBACK came and whether the server closed the connection. */
async function tryPublish(client: MqttClient, topic: string, qos: 0 | 1 | 2): Promise<{ acked: boolean; closed: boolean }> {
  let closed = false;
  const onClose = new Promise<boolean>((r) => client.once('close', () => r(false)));
  void onClose.then(() => (closed = true));
  const acked = await Promise.race([
    client.publishAsync(topic, 'x', { qos }).then(
      () => true,
      () => false,
    ),
    onClose,
    new Promise<boolean>((r) => setTimeout(() => r(false), 1_500)),
  ]);
  // A PUBACK may still be followed by a close: give the server a moment to show which.
  await new Promise((r) => setTimeout(r, 200));
  return { acked, closed };
}

describeWithBroker('nats-server', 'NATS broker behaviour (docker/README.md)', () => {
  let nats: DockerNatsBroker;
  const agent = (opts: object = {}) => connectPlainClient(nats.url, { ...nats.users.agent, reconnectPeriod: 0, ...opts });

  beforeAll(async () => {
    nats = await startDockerNats();
  });

  it('speaks MQTT 3.1.1 only: a v5 CONNECT is refused', async () => {
    await expect(agent({ protocolVersion: 5 })).rejects.toThrow(/Unacceptable protocol version/i);
  });

  it.each([
    ['a "." in a topic', 'python.mqtt/x', 1],
    ['a space in a topic', 'python mqtt/x', 1],
    ['a QoS 2 publish', 'ok/x', 2],
  ] as const)('%s: no PUBACK, the connection is closed', async (_what, topic, qos) => {
    const client = await agent();
    expect(await tryPublish(client, topic, qos)).toEqual({ acked: false, closed: true });
    await client.endAsync(true);
  });

  it('a second connection with the same client id closes the first', async () => {
    const first = await agent({ clientId: 'mam-dup-1' });
    const closed = new Promise<void>((r) => first.once('close', () => r()));
    const second = await agent({ clientId: 'mam-dup-1' });
    await closed;
    expect(second.connected).toBe(true);
    await Promise.all([first.endAsync(true), second.endAsync(true)]);
  });

  it('MAM users cannot use the core NATS port (allowed_connection_types); the system user can', async () => {
    for (const u of [nats.users.agent, nats.users.observer]) {
      expect(await coreConnect(nats.clientPort, u.username, u.password)).toBe("-ERR 'Authorization Violation'");
    }
    expect(await coreConnect(nats.clientPort, 'sys', nats.sysPassword)).toBe('PONG');
  });

  it('an observer may subscribe to the job tree at QoS 1, but not elsewhere (SUBACK 0x80)', async () => {
    const observer = await connectPlainClient(nats.url, { ...nats.users.observer, reconnectPeriod: 0 });
    expect(await observer.subscribeAsync('python/mqtt/jobs/+/events', { qos: 1 })).toEqual([{ topic: 'python/mqtt/jobs/+/events', qos: 1 }]);
    await expect(observer.subscribeAsync('other/#', { qos: 1 })).rejects.toThrow(/Subscribe error/);
    await observer.endAsync(true);
  });

  it('delivers a retained message on subscribe at QoS 1 with the retain flag', async () => {
    const pub = await agent();
    await pub.publishAsync('python/mqtt/jobs/r0000001/state', 'kept', { qos: 1, retain: true });
    await pub.endAsync();
    const sub = await agent();
    const got: Array<[string, number, boolean]> = [];
    sub.on('message', (t, _p, packet) => got.push([t, packet.qos, packet.retain]));
    await sub.subscribeAsync('python/mqtt/jobs/r0000001/state', { qos: 1 });
    await expect.poll(() => got).toEqual([['python/mqtt/jobs/r0000001/state', 1, true]]);
    await sub.endAsync();
  });

  it('keeps publish order within one subscription; across two, a later message may come first', async () => {
    // Each QoS 1 subscription is its own JetStream consumer: `…/events` and `…/state` as two
    // subscriptions are two independent streams of deliveries; `…/+` is one, and stays ordered.
    const pairs = 40;
    const run = async (filters: string[]) => {
      const sub = await agent();
      const got: string[] = [];
      sub.on('message', (_t, p) => got.push(p.toString()));
      await sub.subscribeAsync(filters, { qos: 1 });
      const pub = await agent();
      const base = `python/mqtt/jobs/o${filters.length}000000`;
      for (let i = 0; i < pairs; i++) {
        await Promise.all([pub.publishAsync(`${base}/events`, `e${i}`, { qos: 1 }), pub.publishAsync(`${base}/state`, `s${i}`, { qos: 1 })]);
      }
      await expect.poll(() => got.length, { timeout: 5_000 }).toBe(2 * pairs);
      await Promise.all([sub.endAsync(), pub.endAsync()]);
      return got;
    };
    const ordered = Array.from({ length: pairs }, (_, i) => [`e${i}`, `s${i}`]).flat();
    expect(await run(['python/mqtt/jobs/o1000000/+'])).toEqual(ordered);
    // Not asserted either way (it depends on scheduling), only that nothing is lost.
    expect((await run(['python/mqtt/jobs/o2000000/events', 'python/mqtt/jobs/o2000000/state'])).sort()).toEqual([...ordered].sort());
  });
});
