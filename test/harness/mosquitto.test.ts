import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { expect, it, vi } from 'vitest';
import { describeWithBroker, startMosquitto, TEST_TLS } from '../helpers/brokers.ts';
import { collectMessages, connectPlainClient } from '../helpers/mqtt-client.ts';
import { subscribeAndRecord } from './wire-order.ts';

describeWithBroker('mosquitto', 'mosquitto harness', () => {
  it('relays QoS 1 publishes and retained messages between clients', async () => {
    const broker = await startMosquitto();
    expect(broker.url).toBe(`mqtt://127.0.0.1:${broker.port}`);
    expect(broker.port).not.toBe(1883);
    const sub = await connectPlainClient(broker.url);
    const pub = await connectPlainClient(broker.url);
    const got = await collectMessages(sub, 'm/#', {
      count: 1,
      timeoutMs: 3_000,
      afterSubscribe: () => pub.publishAsync('m/1', 'hi', { qos: 1 }),
    });
    expect(got).toEqual([{ topic: 'm/1', payload: 'hi', retain: false, qos: 1 }]);

    await pub.publishAsync('m/r', 'kept', { qos: 1, retain: true });
    const late = await connectPlainClient(broker.url);
    expect(await collectMessages(late, 'm/r', { count: 1, timeoutMs: 3_000 })).toEqual([{ topic: 'm/r', payload: 'kept', retain: true, qos: 1 }]);
    await Promise.all([sub.endAsync(), pub.endAsync(), late.endAsync()]);
    // The log goes to the temp dir, so a failing test can show what the broker saw.
    expect(readFileSync(broker.logPath, 'utf8')).toMatch(/New client connected/);
  });

  it('sends the SUBACK first, then the retained message at the granted QoS', async () => {
    const broker = await startMosquitto();
    const pub = await connectPlainClient(broker.url);
    await pub.publishAsync('w/1', 'r', { qos: 1, retain: true });
    await pub.endAsync();
    expect(await subscribeAndRecord(broker.port, 'w/#')).toEqual(['suback granted=[1]', 'publish qos=1 retain=true topic=w/1']);
  });

  it('keeps working across restart(); clients reconnect on their own', async () => {
    const broker = await startMosquitto({ persistence: true });
    const firstPid = broker.pid;
    const client = await connectPlainClient(broker.url);
    await client.publishAsync('p/r', 'survives', { qos: 1, retain: true });

    await broker.restart();
    expect(broker.pid).not.toBe(firstPid);
    await vi.waitFor(() => expect(client.connected).toBe(true), { timeout: 5_000 });
    const got = await collectMessages(client, 'p/r', { count: 1, timeoutMs: 3_000 });
    expect(got).toEqual([{ topic: 'p/r', payload: 'survives', retain: true, qos: 1 }]);
    await client.endAsync();
  });

  it('serves TLS 1.3 with the fixture certificates', async () => {
    const broker = await startMosquitto({ tls: true });
    expect(broker.url).toMatch(/^mqtts:\/\//);
    const ca = readFileSync(broker.caFile ?? TEST_TLS.ca);
    const client = await connectPlainClient(broker.url, { ca, servername: 'localhost' });
    const got = await collectMessages(client, 's/1', {
      count: 1,
      timeoutMs: 3_000,
      afterSubscribe: () => client.publishAsync('s/1', 'secure', { qos: 1 }),
    });
    expect(got).toEqual([{ topic: 's/1', payload: 'secure', retain: false, qos: 1 }]);
    await client.endAsync();
    const protocol = await new Promise<string | null>((resolve, reject) => {
      const s = tlsConnect({ host: broker.host, port: broker.port, ca, servername: 'localhost' }, () => {
        resolve(s.getProtocol());
        s.destroy();
      });
      s.once('error', reject);
    });
    expect(protocol).toBe('TLSv1.3');
    // A client that does not trust the CA is refused.
    await expect(connectPlainClient(broker.url, { reconnectPeriod: 0 })).rejects.toThrow(/certificate/i);
  });

  it('passes extra config lines through (here: anonymous refused without a password file)', async () => {
    const broker = await startMosquitto({ allowAnonymous: false, conf: ['max_keepalive 120'] });
    expect(readFileSync(`${broker.dir}/mosquitto.conf`, 'utf8')).toContain('max_keepalive 120');
    await expect(connectPlainClient(broker.url, { reconnectPeriod: 0 })).rejects.toThrow(/Not authorized/i);
  });

  it('reports a server that could not bind instead of mistaking a squatter for it', async () => {
    const squatter = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => squatter.once('listening', r));
    const taken = (squatter.address() as { port: number }).port;
    try {
      await expect(startMosquitto({ conf: [`listener ${taken} 127.0.0.1`] })).rejects.toThrow(/did not open[\s\S]*Address already in use/);
    } finally {
      squatter.close();
    }
  });
});
