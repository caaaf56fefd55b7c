import { describe, expect, it } from 'vitest';
import { type InboundMessage, MessageInbox } from '../../../src/core/subscriber/message-inbox.ts';
import { waitUntil } from '../../helpers/wait.ts';

const msg = (n: number): InboundMessage => ({ topic: `t/${n}`, payload: Buffer.from(String(n)), retain: false });

describe('MessageInbox', () => {
  it('hands messages on in arrival order, in batches, after the network callback returned', async () => {
    const seen: string[] = [];
    const batches = new Set<number>();
    const inbox = new MessageInbox(
      (m, batch) => {
        seen.push(m.topic);
        batches.add(batch);
      },
      () => undefined,
    );
    for (let i = 0; i < 600; i++) inbox.push(msg(i));
    expect(seen).toEqual([]);
    await waitUntil(() => seen.length === 600, 5_000);
    expect(seen).toEqual(Array.from({ length: 600 }, (_, i) => `t/${i}`));
    expect(batches.size).toBe(3); // 256 + 256 + 88
  });

  it('bounded: at the limit the next acknowledgement waits until the drain brought the queue to half', async () => {
    const inbox = new MessageInbox(
      () => undefined,
      () => undefined,
      8,
    );
    const released: number[] = [];
    // What the connection does per message: queue it, then ask for room before reading the next.
    for (let i = 0; i < 8; i++) {
      inbox.push(msg(i));
      inbox.whenRoom(() => released.push(i));
    }
    // Messages 0–6 found room; the 8th filled the queue, so its acknowledgement is held.
    expect(released).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(inbox.size).toBe(8);
    await waitUntil(() => released.length === 8, 5_000);
    expect(inbox.size).toBe(0);
  });

  it('close drops the queue and the held acknowledgement; nothing is handed on after it', async () => {
    let handled = 0;
    const inbox = new MessageInbox(
      () => handled++,
      () => undefined,
      2,
    );
    const released: number[] = [];
    inbox.push(msg(0));
    inbox.push(msg(1));
    inbox.whenRoom(() => released.push(1));
    inbox.close();
    inbox.push(msg(2));
    // The drain was scheduled with setImmediate by the first push: one turn later it has run, or never will.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(handled).toBe(0);
    expect(released).toEqual([]);
  });
});
