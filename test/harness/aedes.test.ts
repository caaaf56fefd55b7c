import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { startEmbeddedBroker } from '../../src/core/broker/embedded-broker.ts';
import { exitCodeOf } from '../../src/cli/exit-codes.ts';
import { MamError } from '../../src/core/errors.ts';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { collectMessages, connectPlainClient, receivedMessages } from '../helpers/mqtt-client.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';
import { subscribeAndRecord } from './wire-order.ts';

describe('embedded aedes broker', () => {
  useBrokerCleanup();

  it('delivers a retained QoS 1 message to a late subscriber with the retain flag', async () => {
    const broker = await startAedesBroker();
    const pub = await connectPlainClient(broker.url);
    await pub.publishAsync('t/retained', 'hello', { qos: 1, retain: true });
    await pub.endAsync();

    const sub = await connectPlainClient(broker.url);
    const got = await collectMessages(sub, 't/+', { count: 1, timeoutMs: 3_000 });
    expect(got).toEqual([{ topic: 't/retained', payload: 'hello', retain: true, qos: 1 }]);

    // A live delivery carries retain=false (MQTT-3.3.1-9), even for a retained publish.
    const pub2 = await connectPlainClient(broker.url);
    const live = await collectMessages(sub, 't/live', {
      count: 1,
      timeoutMs: 3_000,
      afterSubscribe: () => pub2.publishAsync('t/live', 'now', { qos: 1, retain: true }),
    });
    expect(live).toEqual([{ topic: 't/live', payload: 'now', retain: false, qos: 1 }]);
    await Promise.all([sub.endAsync(), pub2.endAsync()]);
  });

  it('sends the SUBACK first, then the retained message at QoS 1 with retain set', async () => {
    const broker = await startAedesBroker();
    const pub = await connectPlainClient(broker.url);
    await pub.publishAsync('w/1', 'r', { qos: 1, retain: true });
    await pub.endAsync();
    const order = await subscribeAndRecord(broker.port, 'w/#');
    expect(order).toEqual(['suback granted=[1]', 'publish qos=1 retain=true topic=w/1']);
  });

  it('keeps retained messages and QoS 1 sessions across a restart when given a data dir', async () => {
    const dataDir = join(tempDirForTest('mam-aedes-'), 'broker');
    const disconnected: unknown[] = [];
    const logger = {
      info: (obj: { client_id?: unknown }, msg: string) => msg === 'client disconnected' && disconnected.push(obj.client_id),
      warn: () => undefined,
    };
    const broker = await startAedesBroker({ dataDir, logger });
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);

    // A persistent session (clean=false) subscribes, then goes away.
    const sess = await connectPlainClient(broker.url, { clientId: 'mam-sess-1', clean: false });
    await sess.subscribeAsync('q/#', { qos: 1 });
    await sess.endAsync();
    // Gone for the broker too: a publish that races the broker's own view of the disconnect goes
    // to the live connection instead of the offline queue (seen once under a loaded full run).
    await vi.waitFor(() => expect(disconnected).toContain('mam-sess-1'));

    const pub = await connectPlainClient(broker.url);
    await pub.publishAsync('r/1', 'kept', { qos: 1, retain: true });
    await pub.publishAsync('q/1', 'queued', { qos: 1 });
    await pub.endAsync();

    await broker.restart();

    const late = await connectPlainClient(broker.url);
    expect(await collectMessages(late, 'r/1', { count: 1, timeoutMs: 3_000 })).toEqual([{ topic: 'r/1', payload: 'kept', retain: true, qos: 1 }]);
    await late.endAsync();

    // Queued while offline, stored in the DB, delivered after the restart on resume.
    // It comes right after CONNACK, without a new SUBSCRIBE: read the client's inbox.
    const back = await connectPlainClient(broker.url, { clientId: 'mam-sess-1', clean: false });
    await vi.waitFor(() => expect(receivedMessages(back)).toEqual([{ topic: 'q/1', payload: 'queued', retain: false, qos: 1 }]));
    await back.endAsync();
  });

  it('refuses a second broker on the same data dir', async () => {
    const dataDir = tempDirForTest('mam-aedes-');
    const first = await startEmbeddedBroker({ port: 0, dataDir });
    try {
      await expect(startEmbeddedBroker({ port: 0, dataDir })).rejects.toThrow(`data dir ${dataDir} is in use by another broker`);
    } finally {
      await first.close();
    }
  });

  it('rejects a port already in use with a one-line MamError', async () => {
    const broker = await startAedesBroker();
    const err = await startEmbeddedBroker({ port: broker.port }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MamError);
    expect((err as MamError).message).toBe(`port ${broker.port} on 127.0.0.1 is already in use`);
    expect(exitCodeOf(err)).toBe(1);

    // The failed start must not keep the DB lock: the same folder opens on another port.
    const dataDir = tempDirForTest('mam-aedes-');
    await expect(startEmbeddedBroker({ port: broker.port, dataDir })).rejects.toThrow(/already in use/);
    const ok = await startEmbeddedBroker({ port: 0, dataDir });
    await ok.close();
  });

  it('closes promptly with clients still connected, and frees the port', async () => {
    const broker = await startEmbeddedBroker({ port: 0 });
    const url = `mqtt://127.0.0.1:${broker.port}`;
    const clients = await Promise.all([1, 2, 3].map(() => connectPlainClient(url, { reconnectPeriod: 0 })));
    const started = Date.now();
    await broker.close();
    expect(Date.now() - started).toBeLessThan(1_500);
    await vi.waitFor(() => expect(clients.every((c) => !c.connected)).toBe(true));
    const again = await startEmbeddedBroker({ port: broker.port });
    await again.close();
    await Promise.all(clients.map((c) => c.endAsync(true)));
  });

  it('logs connects, disconnects and refused credentials', async () => {
    const logger = { info: vi.fn(), warn: vi.fn() };
    const broker = await startAedesBroker({ logger, auth: { username: 'agent', password: 's3cret' } });
    const ok = await connectPlainClient(broker.url, { clientId: 'mam-ok', username: 'agent', password: 's3cret' });
    await ok.endAsync();
    await expect(connectPlainClient(broker.url, { clientId: 'mam-bad', username: 'agent', password: 'nope', reconnectPeriod: 0 })).rejects.toThrow(
      /Bad username or password/i,
    );
    await vi.waitFor(() => {
      expect(logger.info).toHaveBeenCalledWith({ client_id: 'mam-ok' }, 'client connected');
      expect(logger.info).toHaveBeenCalledWith({ client_id: 'mam-ok' }, 'client disconnected');
      expect(logger.warn).toHaveBeenCalledWith({ client_id: 'mam-bad', username: 'agent' }, 'auth refused');
    });
    // Passwords never reach a log line.
    expect(JSON.stringify([logger.info.mock.calls, logger.warn.mock.calls])).not.toContain('nope');
  });

  it('speaks MQTT over WebSocket when given a wsPort', async () => {
    const broker = await startAedesBroker({ wsPort: 0 });
    expect(broker.wsUrl).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    const wsClient = await connectPlainClient(broker.wsUrl ?? '');
    const tcpClient = await connectPlainClient(broker.url);
    const got = await collectMessages(wsClient, 'ws/#', {
      count: 1,
      timeoutMs: 3_000,
      afterSubscribe: () => tcpClient.publishAsync('ws/1', 'over-ws', { qos: 1 }),
    });
    expect(got).toEqual([{ topic: 'ws/1', payload: 'over-ws', retain: false, qos: 1 }]);
    await Promise.all([wsClient.endAsync(), tcpClient.endAsync()]);
  });
});
