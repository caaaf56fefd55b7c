import { connect } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { collectMessages, connectPlainClient, receivedMessages } from '../helpers/mqtt-client.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';

describe('tcp proxy', () => {
  useBrokerCleanup();

  it('cut() drops the connection and MQTT.js reconnects through the proxy', async () => {
    const broker = await startAedesBroker();
    const proxy = await startTcpProxy(broker.host, broker.port);
    try {
      const client = await connectPlainClient(`mqtt://127.0.0.1:${proxy.port}`, { reconnectPeriod: 100 });
      expect(proxy.connections).toBe(1);
      const closed = new Promise<void>((r) => client.once('close', () => r()));
      const reconnected = new Promise<void>((r) => client.once('connect', () => r()));
      proxy.cut();
      await closed;
      await reconnected;
      expect(proxy.connections).toBe(1);
      const direct = await connectPlainClient(broker.url);
      const got = await collectMessages(client, 'c/1', {
        count: 1,
        timeoutMs: 3_000,
        afterSubscribe: () => direct.publishAsync('c/1', 'after-cut', { qos: 1 }),
      });
      expect(got).toEqual([{ topic: 'c/1', payload: 'after-cut', retain: false, qos: 1 }]);
      await Promise.all([client.endAsync(true), direct.endAsync()]);
    } finally {
      await proxy.close();
    }
  });

  it('pause() drops new connections until resume(); existing ones are kept', async () => {
    const broker = await startAedesBroker();
    const proxy = await startTcpProxy(broker.host, broker.port);
    const url = `mqtt://127.0.0.1:${proxy.port}`;
    try {
      const kept = await connectPlainClient(url);
      proxy.pause();
      await expect(connectPlainClient(url, { reconnectPeriod: 0 })).rejects.toThrow();
      expect(kept.connected).toBe(true);
      proxy.resume();
      const fresh = await connectPlainClient(url);
      await Promise.all([kept.endAsync(true), fresh.endAsync(true)]);
    } finally {
      await proxy.close();
    }
  });

  it('stall() holds bytes without closing; unstall() delivers them', async () => {
    const broker = await startAedesBroker();
    const proxy = await startTcpProxy(broker.host, broker.port);
    try {
      const client = await connectPlainClient(`mqtt://127.0.0.1:${proxy.port}`);
      await client.subscribeAsync('s/#', { qos: 1 });
      const direct = await connectPlainClient(broker.url);
      proxy.stall();
      await direct.publishAsync('s/1', 'held', { qos: 1 });
      await new Promise((r) => setTimeout(r, 300));
      expect(receivedMessages(client)).toEqual([]);
      expect(client.connected).toBe(true);
      proxy.unstall();
      await vi.waitFor(() => expect(receivedMessages(client)).toEqual([{ topic: 's/1', payload: 'held', retain: false, qos: 1 }]));
      await Promise.all([client.endAsync(true), direct.endAsync()]);
    } finally {
      await proxy.close();
    }
  });

  it('close() ends relayed connections and stops listening', async () => {
    const broker = await startAedesBroker();
    const proxy = await startTcpProxy(broker.host, broker.port);
    const client = await connectPlainClient(`mqtt://127.0.0.1:${proxy.port}`, { reconnectPeriod: 0 });
    await proxy.close();
    await vi.waitFor(() => expect(client.connected).toBe(false));
    const refused = await new Promise<string>((r) => connect(proxy.port, '127.0.0.1').once('error', (e: NodeJS.ErrnoException) => r(e.code ?? '')));
    expect(refused).toBe('ECONNREFUSED');
    await client.endAsync(true);
  });
});
