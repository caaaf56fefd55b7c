import { readFileSync } from 'node:fs';
import { expect, it, vi } from 'vitest';
import { describeWithBroker, startNatsServer } from '../helpers/brokers.ts';
import { collectMessages, connectPlainClient, receivedMessages } from '../helpers/mqtt-client.ts';
import { subscribeAndRecord } from './wire-order.ts';

describeWithBroker('nats-server', 'nats-server MQTT harness', () => {
  it('relays QoS 1 publishes over its MQTT port (3.1.1)', async () => {
    const broker = await startNatsServer();
    expect(broker.port).not.toBe(1883);
    expect(broker.clientPort).not.toBe(4222);
    expect(readFileSync(broker.logPath, 'utf8')).toContain(`Listening for MQTT clients on mqtt://127.0.0.1:${broker.port}`);
    const sub = await connectPlainClient(broker.url);
    const pub = await connectPlainClient(broker.url);
    const got = await collectMessages(sub, 'n/#', {
      count: 2,
      timeoutMs: 5_000,
      afterSubscribe: async () => {
        await pub.publishAsync('n/1', 'one', { qos: 1 });
        await pub.publishAsync('n/2', 'two', { qos: 1 });
      },
    });
    expect(got).toEqual([
      { topic: 'n/1', payload: 'one', retain: false, qos: 1 },
      { topic: 'n/2', payload: 'two', retain: false, qos: 1 },
    ]);
    await Promise.all([sub.endAsync(), pub.endAsync()]);
  });

  it('sends the SUBACK first, then retained messages at QoS 1 in no particular order', async () => {
    // Observed on 2.9.10: SUBACK leads, but the retained set comes in Go map order, not publish
    // order — a subscriber must not infer anything from the order of retained messages.
    const broker = await startNatsServer();
    const pub = await connectPlainClient(broker.url);
    for (const n of [1, 2, 3]) await pub.publishAsync(`w/${n}`, 'r', { qos: 1, retain: true });
    await pub.endAsync();
    const seen = await subscribeAndRecord(broker.port, 'w/#');
    expect(seen[0]).toBe('suback granted=[1]');
    expect(seen.slice(1).sort()).toEqual([1, 2, 3].map((n) => `publish qos=1 retain=true topic=w/${n}`));
  });

  it('queues QoS 1 messages for an offline persistent session and keeps them across restart()', async () => {
    const broker = await startNatsServer();
    const sess = await connectPlainClient(broker.url, { clientId: 'mam-nats-sess', clean: false });
    await sess.subscribeAsync('q/#', { qos: 1 });
    await sess.endAsync();

    const pub = await connectPlainClient(broker.url, { reconnectPeriod: 0 });
    await pub.publishAsync('q/1', 'queued', { qos: 1 });
    await pub.publishAsync('r/1', 'kept', { qos: 1, retain: true });
    await pub.endAsync();

    await broker.restart();

    // The queued message comes right after CONNACK, without a new SUBSCRIBE: hence the inbox.
    const back = await connectPlainClient(broker.url, { clientId: 'mam-nats-sess', clean: false });
    await vi.waitFor(() => expect(receivedMessages(back)).toEqual([{ topic: 'q/1', payload: 'queued', retain: false, qos: 1 }]), {
      timeout: 5_000,
    });
    // Clearing the session on exit (contract §4) is a clean-session connect.
    await back.endAsync();
    const clear = await connectPlainClient(broker.url, { clientId: 'mam-nats-sess', clean: true });
    await clear.endAsync();

    const late = await connectPlainClient(broker.url);
    expect(await collectMessages(late, 'r/1', { count: 1, timeoutMs: 5_000 })).toEqual([{ topic: 'r/1', payload: 'kept', retain: true, qos: 1 }]);
    await late.endAsync();
  });

  it('lets a connected client reconnect after restart()', async () => {
    const broker = await startNatsServer();
    const client = await connectPlainClient(broker.url);
    await broker.restart();
    await vi.waitFor(() => expect(client.connected).toBe(true), { timeout: 10_000 });
    const got = await collectMessages(client, 'after/1', {
      count: 1,
      timeoutMs: 5_000,
      afterSubscribe: () => client.publishAsync('after/1', 'x', { qos: 1 }),
    });
    expect(got).toEqual([{ topic: 'after/1', payload: 'x', retain: false, qos: 1 }]);
    await client.endAsync();
  });

  it('takes extra config lines; acknowledges a publish its ACL dropped (contract §3)', async () => {
    const broker = await startNatsServer({
      conf: [
        'authorization {',
        '  users = [',
        '    { user: agent, password: agentpw }',
        '    { user: observer, password: obspw, permissions: { publish: { deny: ["python.>"] } } }',
        '  ]',
        '}',
      ],
    });
    // Bad credentials get CONNACK 5 "not authorized" from NATS.
    await expect(connectPlainClient(broker.url, { username: 'agent', password: 'nope', reconnectPeriod: 0 })).rejects.toThrow(/Not authorized/);
    const agent = await connectPlainClient(broker.url, { username: 'agent', password: 'agentpw' });
    const observer = await connectPlainClient(broker.url, { username: 'observer', password: 'obspw' });
    const got = await collectMessages(agent, 'python/#', {
      timeoutMs: 1_000,
      afterSubscribe: async () => {
        await observer.publishAsync('python/x/events', 'dropped', { qos: 1 }); // resolves: PUBACK came
        await agent.publishAsync('python/x/events', 'delivered', { qos: 1 });
      },
    });
    expect(got.map((m) => m.payload)).toEqual(['delivered']);
    await Promise.all([agent.endAsync(), observer.endAsync()]);
  });
});
