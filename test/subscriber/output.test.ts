import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { type TestBroker, describeWithBroker, startAedesBroker, startMosquitto, useBrokerCleanup } from '../helpers/brokers.ts';
import type { Workspace } from '../helpers/cli.ts';
import { collectMessages, connectPlainClient } from '../helpers/mqtt-client.ts';
import { auditOf, brokerWorkspace, eventsTopicOf, publishOk, recordOf, recordPath, register } from '../publisher/publish-fixtures.ts';
import { startWatcher, stderrBesidesSubscribed } from './watcher.ts';

/**
 * What `mam-subscribe` prints (contract §4): retained outcomes for a late watcher, duplicates,
 * `--pretty`, a closed stdout, and `--all` monitor mode.
 */

/**
 * A second workspace holding a copy of `id`'s record as it is now: a delegator whose registry does
 * not learn the outcome on its own, so only the wire can resolve the job there.
 */
function delegatorCopy(from: Workspace, port: number, id: string): Workspace {
  const ws = brokerWorkspace(port);
  mkdirSync(path.dirname(recordPath(ws, id)), { recursive: true, mode: 0o700 });
  copyFileSync(recordPath(from, id), recordPath(ws, id));
  return ws;
}

function lateSubscriberTests(start: () => Promise<TestBroker>): void {
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await start();
  });

  it.each([
    ['completed', 0],
    ['error', 1],
  ] as const)('a late subscriber is resolved by the retained %s, printed once (exit %i)', async (outcome, code) => {
    const agent = brokerWorkspace(broker.port);
    const id = outcome === 'completed' ? 'd4000001' : 'd4000002';
    await register(agent, id);
    const delegator = delegatorCopy(agent, broker.port, id);
    for (const event of ['started', 'progress', outcome]) await publishOk(agent, id, event);
    const w = startWatcher(delegator, ['--job', id]);
    const exit = await w.exit(8_000);
    expect(exit.code).toBe(code);
    // One line: the retained terminal event or the retained terminal state, whichever came first.
    expect(w.events()).toHaveLength(1);
    const line = w.events()[0]!;
    expect(line.seq).toBe(3);
    expect(line.event === 'state' ? line.status : line.event).toBe(outcome);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
    // The delegator's record is not the agent's: it is left as it was.
    expect(recordOf(delegator, id).status).toBe('pending');
  });
}

describe('mam-subscribe output (embedded broker)', () => {
  useBrokerCleanup();
  lateSubscriberTests(() => startAedesBroker());

  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  it('a redelivered event (same signed bytes) is printed once and audited duplicate', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'd4000003';
    await register(ws, id);
    const tap = await connectPlainClient(broker.url);
    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    const [started] = await collectMessages(tap, eventsTopicOf(id), { count: 1, timeoutMs: 5_000, afterSubscribe: () => publishOk(ws, id, 'started') });
    await vi.waitFor(() => expect(w.lines()).toHaveLength(1));
    // The same bytes again, three times, as a broker's QoS 1 redelivery would bring them.
    for (let i = 0; i < 3; i++) await tap.publishAsync(eventsTopicOf(id), started!.payload, { qos: 1 });
    await vi.waitFor(() => expect(auditOf(ws, id).filter((l) => l.type === 'duplicate')).toHaveLength(3));
    await publishOk(ws, id, 'completed');
    const exit = await w.exit();
    await tap.endAsync();
    expect(exit.code).toBe(0);
    expect(w.events().map((e) => [e.seq, e.event])).toEqual([
      [1, 'started'],
      [2, 'completed'],
    ]);
    expect(w.lines()[0]).toBe(started!.payload);
    expect(auditOf(ws, id).filter((l) => l.type === 'duplicate')).toEqual(
      Array.from({ length: 3 }, () => expect.objectContaining({ type: 'duplicate', seq: 1, event: 'started' })),
    );
    expect(auditOf(ws, id).filter((l) => l.type === 'rejected')).toEqual([]);
  });

  it('--pretty prints one human line per event', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'd4000004';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id, '--pretty']);
    await w.subscribed();
    await publishOk(ws, id, 'started', '--detail', 'on it');
    await publishOk(ws, id, 'completed', '--detail', 'done and dusted');
    const exit = await w.exit();
    expect(exit.code).toBe(0);
    const lines = w.lines();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z +${id} +#1 +started +on it$`));
    expect(lines[1]).toMatch(new RegExp(`${id} +#2 +completed +done and dusted$`));
    for (const l of lines) expect(l).not.toMatch(/[{}]/);
  });

  it('a closed stdout (`| head -1`) ends the watch quietly', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'd4000005';
    await register(ws, id);
    // The subscriber's own exit status goes to stderr, past the pipe.
    const w = startWatcher(ws, ['--job', id], { shell: (cmd) => `{ ${cmd}; echo "rc=$?" >&2; } | head -1` });
    await w.subscribed();
    await publishOk(ws, id, 'started');
    await vi.waitFor(() => expect(w.lines()).toHaveLength(1));
    // head has exited: the next line meets a closed pipe.
    await publishOk(ws, id, 'progress');
    await publishOk(ws, id, 'progress');
    const exit = await w.exit(8_000);
    expect(exit.code).toBe(0);
    expect(w.events().map((e) => e.event)).toEqual(['started']);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('rc=0');
  });

  it('--all watches every job, never exits on a terminal, and ends with 0 on SIGTERM', async () => {
    // A broker of its own: the retained messages of the other tests' jobs are unknown here, and
    // a monitor logs each one it discards (pino, on stderr).
    const own = await startAedesBroker();
    const ws = brokerWorkspace(own.port);
    const [a, b, c] = ['d4000006', 'd4000007', 'd4000008'];
    await Promise.all([register(ws, a), register(ws, b), register(ws, c)]);
    const w = startWatcher(ws, ['--all']);
    await w.subscribed();
    await Promise.all([
      (async () => {
        await publishOk(ws, a, 'started');
        await publishOk(ws, a, 'completed');
      })(),
      (async () => {
        await publishOk(ws, b, 'started');
        await publishOk(ws, b, 'error');
      })(),
      publishOk(ws, c, 'started'),
    ]);
    await vi.waitFor(() => expect(w.lines()).toHaveLength(5), { timeout: 5_000 });
    // Two terminals did not end the monitor: it still prints what comes next.
    await publishOk(ws, c, 'progress');
    await vi.waitFor(() => expect(w.lines()).toHaveLength(6), { timeout: 5_000 });
    w.child.kill('SIGTERM');
    const exit = await w.exit(5_000);
    expect(exit.code).toBe(0);
    const seen = w.events().map((e) => `${e.job_id} ${e.seq} ${e.event}`);
    expect(seen.sort()).toEqual([`${a} 1 started`, `${a} 2 completed`, `${b} 1 started`, `${b} 2 error`, `${c} 1 started`, `${c} 2 progress`]);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
  });

  it('--all: SIGINT ends it with 0 too; a job outside the registry is not printed', async () => {
    const ws = brokerWorkspace(broker.port);
    const other = brokerWorkspace(broker.port);
    await register(ws, 'd4000009');
    await register(other, 'd400000a');
    const w = startWatcher(ws, ['--all']);
    await w.subscribed();
    await publishOk(other, 'd400000a', 'completed');
    await publishOk(ws, 'd4000009', 'started');
    // The other registry's job went first on the wire, so it was handled (and rejected) before this line.
    await vi.waitFor(() => expect(w.lines()).toHaveLength(1));
    w.child.kill('SIGINT');
    const exit = await w.exit(5_000);
    expect(exit.code).toBe(0);
    expect(w.events().map((e) => e.job_id)).toEqual(['d4000009']);
  });
});

describeWithBroker('mosquitto', 'mam-subscribe output (mosquitto)', () => {
  lateSubscriberTests(() => startMosquitto());
});
