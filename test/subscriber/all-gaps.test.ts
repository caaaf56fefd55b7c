import { describe, expect, it, vi } from 'vitest';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { type Workspace, runBinAsync } from '../helpers/cli.ts';
import { sleep } from '../helpers/wait.ts';
import { auditOf, brokerWorkspace, deadPort, publishOk, register } from '../publisher/publish-fixtures.ts';
import { startWatcher } from './watcher.ts';

/**
 * Contract §4, "Gaps", under `--all`: a monitor started mid-job cannot know which seqs it missed,
 * so the first event it sees of such a job sets the baseline. A job registered after the monitor
 * was subscribed is different: every event of its first attempt was published to the monitor, so
 * a lost seq 1 is a `seq_gap` like any other.
 */

/** An event recorded on disk but never delivered: published to a port where no broker listens. */
async function publishLost(ws: Workspace, id: string): Promise<void> {
  const r = await runBinAsync('mam-publish', ['--job', id, '--event', 'progress', '--attempts', '1'], ws, { env: { MQTT_PORT: String(await deadPort()) } });
  expect(r.code, r.stderr).toBe(2);
}

describe('mam-subscribe --all: seq gaps of jobs it sees first', () => {
  useBrokerCleanup();

  it('audits a lost seq 1 of a local job registered after it subscribed; no baseline for one registered before, nor for a remote record', async () => {
    const broker = await startAedesBroker();
    const ws = brokerWorkspace(broker.port);
    const before = 'b0000001';
    const after = 'a0000001';
    const remote = 'c0000001';
    await register(ws, before);
    await publishLost(ws, before);

    const w = startWatcher(ws, ['--all']);
    await w.subscribed();
    // Past the margin the monitor allows (REGISTERED_AFTER_SUBSCRIBED_MS).
    await sleep(2_100);
    await register(ws, after);
    await publishLost(ws, after);
    // A remote record may be a runner's copy, made with the job's last_seq already past 0: no baseline.
    await register(ws, remote, '--transport', 'remote');
    await publishLost(ws, remote);

    await publishOk(ws, before, 'progress');
    await publishOk(ws, after, 'progress');
    await publishOk(ws, remote, 'progress');
    await vi.waitFor(() =>
      expect(w.events().map((e) => [e.job_id, e.seq])).toEqual(
        expect.arrayContaining([
          [before, 2],
          [after, 2],
          [remote, 2],
        ]),
      ),
    );
    await publishOk(ws, after, 'progress');
    await vi.waitFor(() => expect(w.events()).toHaveLength(4));

    const gaps = (id: string) => auditOf(ws, id).filter((l) => l.type === 'seq_gap');
    expect(gaps(after)).toEqual([expect.objectContaining({ seq: 2, expected: 1 })]);
    expect(gaps(before)).toEqual([]);
    expect(gaps(remote)).toEqual([]);
  });
});
