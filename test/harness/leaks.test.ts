import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { withoutLeaks } from '../helpers/in-process.ts';

// The leaked-handle check of the in-process and API tests must itself be able to fail.
describe('withoutLeaks', () => {
  it('passes code that cleans up after itself', async () => {
    await expect(
      withoutLeaks('clean', async () => {
        const timer = setInterval(() => undefined, 1000);
        clearInterval(timer);
        return 7;
      }),
    ).resolves.toBe(7);
  });

  it('fails code that leaves a timer running, naming it', async () => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await expect(
        withoutLeaks('leaky', async () => {
          timer = setInterval(() => undefined, 1000);
        }),
      ).rejects.toThrow(/^leaky: left behind Timeout ×1$/);
    } finally {
      clearInterval(timer);
    }
  });

  it('fails code that leaves a server listening; two overlapping runs are checked when the last ends', async () => {
    const server = createServer();
    try {
      const first = withoutLeaks('first', async () => {
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      });
      const second = withoutLeaks('second', () => new Promise((resolve) => setTimeout(resolve, 50)));
      await first;
      await expect(second).rejects.toThrow(/^second: left behind TCPSERVERWRAP ×1$/);
    } finally {
      server.close();
    }
  });
});
