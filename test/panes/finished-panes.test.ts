import { spawnSync } from 'node:child_process';
import { expect, it, onTestFinished } from 'vitest';
import { TmuxPane } from '../../src/core/panes/tmux-pane.ts';
import { type Workspace, makeWorkspace, runBin, runBinAsync } from '../helpers/cli.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';
import { describeWithTmux } from './tmux-fixtures.ts';

/** A workspace whose commands talk to a tmux server of this test's own, killed when the test ends. */
function workspaceWithTmux(): Workspace {
  const ws = makeWorkspace({ TMUX_TMPDIR: tempDirForTest('mam-tmux-') });
  onTestFinished(() => {
    spawnSync('tmux', ['kill-server'], { env: ws.env });
    ws.cleanup();
  });
  return ws;
}

const register = (ws: Workspace): string => JSON.parse(runBin('mam-register', ['--brief', 'b'], ws).stdout).job_id as string;

describeWithTmux('mam sessions: the panes of finished jobs', () => {
  it('a pane whose job is closed and whose agent ended (its delegate died before closing it) is closed by the listing; a live one stays', async () => {
    const ws = workspaceWithTmux();
    const server = { env: ws.env };
    const [finishedDead, finishedLive, openDead] = [register(ws), register(ws), register(ws)];
    const a = await TmuxPane.start({ jobId: finishedDead, command: 'exit 0', env: ws.env, server });
    const b = await TmuxPane.start({ jobId: finishedLive, command: 'sleep 300', env: ws.env, server });
    const c = await TmuxPane.start({ jobId: openDead, command: 'exit 1', env: ws.env, server });
    await a.exited;
    await c.exited;
    for (const id of [finishedDead, finishedLive])
      expect(runBin('mam-close', ['--job', id, '--request', 'completed'], { ...ws, env: { ...ws.env, MQTT_PORT: '9' } }).code).toBe(0);

    const listed = await runBinAsync('mam', ['sessions', '--json'], ws);
    expect(listed.code, listed.stderr).toBe(0);
    const jobs = listed.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { job_id: string }).job_id);
    expect(jobs.sort()).toEqual([finishedLive, openDead].sort());
    expect(spawnSync('tmux', ['has-session', '-t', `=mam-${finishedDead}`], { env: ws.env }).status).not.toBe(0);
    await b.stop();
    await c.stop();
  });
});
