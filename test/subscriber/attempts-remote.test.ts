import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { withRegistryLock } from '../../src/core/registry/lock.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { type Workspace, runBinAsync } from '../helpers/cli.ts';
import { auditOf, brokerWorkspace, publishOk, recordOf, recordPath, register } from '../publisher/publish-fixtures.ts';
import { sleep } from '../helpers/wait.ts';
import { startWatcher, stderrBesidesSubscribed } from './watcher.ts';

/**
 * Contract §4: only the record's current attempt counts (a redispatch leaves the earlier attempt's
 * terminal event and state retained on the broker), and `--remote` mirrors the agent's `started`
 * and outcome into the delegator's own registry.
 */

describe('mam-subscribe and attempts', () => {
  useBrokerCleanup();
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  it("attempt 1's retained completed does not resolve attempt 2; attempt 2's events do", async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'f6000001';
    await register(ws, id);
    await publishOk(ws, id, 'started');
    await publishOk(ws, id, 'completed');
    const redispatch = await runBinAsync('mam', ['redispatch', '--job', id], ws);
    expect(redispatch.code).toBe(0);
    const rec = recordOf(ws, id);
    expect(rec).toMatchObject({ status: 'pending', attempt_id: 2, last_seq: 2 });

    // Nothing of attempt 2 arrives: the leftovers alone must not end the watch as completed.
    const idle = startWatcher(ws, ['--job', id, '--idle-timeout', '1', '--ack-timeout', '1']);
    const idleExit = await idle.exit(8_000);
    expect(idleExit.code).toBe(2);
    expect(idleExit.stdout).toBe('');
    const stale = auditOf(ws, id).filter((l) => l.type === 'rejected');
    expect(stale.length).toBeGreaterThanOrEqual(2);
    expect(new Set(stale.map((l) => l.reason))).toEqual(new Set(['stale_attempt']));
    expect(new Set(stale.map((l) => l.topic))).toEqual(new Set([`python/mqtt/jobs/${id}/events`, `python/mqtt/jobs/${id}/state`]));

    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    await vi.waitFor(() => expect(auditOf(ws, id).filter((l) => l.type === 'rejected').length).toBeGreaterThanOrEqual(stale.length + 2));
    // The retained leftovers were rejected; that none was printed is shown below: the first line
    // printed is attempt 2's `started`.

    await publishOk(ws, id, 'started', '--attempt-id', '2');
    await publishOk(ws, id, 'completed', '--expect-dispatch-token', rec.dispatch_token);
    const exit = await w.exit();
    expect(exit.code).toBe(0);
    expect(w.events().map((e) => [e.seq, e.event, e.data.attempt_id, e.data.dispatch_token])).toEqual([
      [3, 'started', 2, rec.dispatch_token],
      [4, 'completed', 2, rec.dispatch_token],
    ]);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
    expect(auditOf(ws, id).filter((l) => l.type === 'seq_gap')).toEqual([]);
  });

  it('an attempt-2 error after attempt-1 completed ends with 1, not 0', async () => {
    const ws = brokerWorkspace(broker.port);
    const id = 'f6000002';
    await register(ws, id);
    await publishOk(ws, id, 'completed');
    expect((await runBinAsync('mam', ['redispatch', '--job', id], ws)).code).toBe(0);
    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    await publishOk(ws, id, 'error', '--attempt-id', '2');
    const exit = await w.exit();
    expect(exit.code).toBe(1);
    expect(w.events().map((e) => [e.seq, e.event])).toEqual([[2, 'error']]);
  });
});

/** The delegator's registry: a copy of the agent's record, taken before the agent did anything. */
function delegatorCopy(from: Workspace, port: number, id: string): Workspace {
  const ws = brokerWorkspace(port);
  mkdirSync(path.dirname(recordPath(ws, id)), { recursive: true, mode: 0o700 });
  copyFileSync(recordPath(from, id), recordPath(ws, id));
  return ws;
}

describe('mam-subscribe --remote', () => {
  useBrokerCleanup();
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  it.each([
    ['completed', 0],
    ['error', 1],
  ] as const)('mirrors started and %s into the delegator registry (exit %i)', async (outcome, code) => {
    const agent = brokerWorkspace(broker.port);
    const id = outcome === 'completed' ? 'f6000003' : 'f6000004';
    await register(agent, id);
    const delegator = delegatorCopy(agent, broker.port, id);
    const w = startWatcher(delegator, ['--job', id, '--remote']);
    await w.subscribed();

    await publishOk(agent, id, 'started');
    await vi.waitFor(() => expect(recordOf(delegator, id)).toMatchObject({ status: 'running', last_seq: 1 }));
    await publishOk(agent, id, 'progress');
    await publishOk(agent, id, outcome);
    const exit = await w.exit();
    expect(exit.code).toBe(code);
    expect(w.events().map((e) => e.event)).toEqual(['started', 'progress', outcome]);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');

    // Mirrored before the process ended: a wrapper reads the record right after the exit code.
    const mirrored = recordOf(delegator, id);
    expect(mirrored).toMatchObject({ status: outcome, last_seq: 3, attempt_id: 1 });
    expect(mirrored.auth_token).toBe(recordOf(agent, id).auth_token);
    const changes = auditOf(delegator, id).filter((l) => l.type === 'status_changed');
    expect(changes.map((l) => [l.source, l.from, l.to])).toEqual([
      ['remote', 'pending', 'running'],
      ['remote', 'running', outcome],
    ]);
  });

  it('the outcome is mirrored before the exit even while the registry lock is busy', async () => {
    const agent = brokerWorkspace(broker.port);
    const id = 'f6000006';
    await register(agent, id);
    const delegator = delegatorCopy(agent, broker.port, id);
    const w = startWatcher(delegator, ['--job', id, '--remote']);
    await w.subscribed();
    await publishOk(agent, id, 'started');
    await vi.waitFor(() => expect(recordOf(delegator, id).status).toBe('running'));
    // Another command of the delegator's (a pick, a register) holds the lock while the outcome arrives.
    const registryDir = path.dirname(recordPath(delegator, id));
    let holding!: () => void;
    const held = new Promise<void>((r) => (holding = r));
    const busy = withRegistryLock(registryDir, path.join(registryDir, '.lock'), async () => {
      holding();
      await sleep(2_000);
    });
    await held;
    await publishOk(agent, id, 'completed');
    // Printed at once; the exit waits for the mirror, which waits for the lock.
    await vi.waitFor(() => expect(w.lines()).toHaveLength(2));
    expect(recordOf(delegator, id).status).toBe('running');
    const exit = await w.exit();
    await busy;
    expect(exit.code).toBe(0);
    expect(recordOf(delegator, id)).toMatchObject({ status: 'completed', last_seq: 2 });
  });

  it('without --remote the delegator record is left alone', async () => {
    const agent = brokerWorkspace(broker.port);
    const id = 'f6000005';
    await register(agent, id);
    const delegator = delegatorCopy(agent, broker.port, id);
    const w = startWatcher(delegator, ['--job', id]);
    await w.subscribed();
    await publishOk(agent, id, 'started');
    await publishOk(agent, id, 'completed');
    expect((await w.exit()).code).toBe(0);
    expect(recordOf(delegator, id)).toMatchObject({ status: 'pending', last_seq: 0 });
  });
});
