import { describe, expect, it } from 'vitest';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';

/**
 * Regression: with its disk persistence, aedes used to run the publishes of one TCP read
 * concurrently; the retained state overtook the terminal event sent just before it, and aedes'
 * duplicate filter then dropped the event. mam-publish sends exactly such a pair back to back.
 */
describe('embedded broker with a data dir: order and completeness of back-to-back publishes', () => {
  useBrokerCleanup();

  it.each([true, false])('a subscriber with clean=%s gets every message, in publish order', async (clean) => {
    const broker = await startAedesBroker({ dataDir: tempDirForTest('mam-aedes-') });
    const sub = await connectPlainClient(broker.url, { clean, clientId: `mam-order-${clean}` });
    const got: string[] = [];
    sub.on('message', (_t, payload) => got.push(payload.toString()));
    await sub.subscribeAsync('o/#', { qos: 1 });
    const pub = await connectPlainClient(broker.url);
    const pairs = 60;
    for (let i = 0; i < pairs; i++) {
      // Both PUBLISH packets leave in one write, as the one-shot publisher sends event + state.
      await Promise.all([pub.publishAsync('o/events', `e${i}`, { qos: 1, retain: true }), pub.publishAsync('o/state', `s${i}`, { qos: 1, retain: true })]);
    }
    const want = Array.from({ length: pairs }, (_, i) => [`e${i}`, `s${i}`]).flat();
    await expect.poll(() => got.length, { timeout: 5_000 }).toBe(want.length);
    expect(got).toEqual(want);
    await Promise.all([sub.endAsync(), pub.endAsync()]);
  });
});
