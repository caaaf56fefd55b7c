import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it, onTestFinished } from 'vitest';
import { sessionsCommand } from '../../src/cli/commands/sessions.ts';
import { parseArgv } from '../../src/cli/program.ts';
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

it('argv: --json and --registry', async () => {
  expect(await parseArgv(sessionsCommand, [])).toEqual({});
  expect(await parseArgv(sessionsCommand, ['--json', '--registry', 'r'])).toEqual({ json: true, registry: 'r' });
});

it('without tmux: one line that says what to install, exit 1', () => {
  const ws = makeWorkspace({ PATH: tempDirForTest('mam-empty-path-') });
  onTestFinished(() => ws.cleanup());
  const r = runBin('mam', ['sessions'], ws);
  expect(r.stderr).toBe('ERROR: --pane tmux: tmux is not installed (apt install tmux)\n');
  expect(r.code).toBe(1);
});

describeWithTmux('mam sessions', () => {
  it('no tmux server running: nothing listed, exit 0', () => {
    const ws = workspaceWithTmux();
    const table = runBin('mam', ['sessions'], ws);
    expect(table).toMatchObject({ code: 0, stdout: '', stderr: 'no MAM tmux sessions\n' });
    expect(runBin('mam', ['sessions', '--json'], ws)).toMatchObject({ code: 0, stdout: '', stderr: '' });
  });

  it("lists MAM's panes with their job, the job's status from the registry, and the attach line", async () => {
    const ws = workspaceWithTmux();
    const server = { env: ws.env };
    const running = register(ws);
    const ended = register(ws);
    const a = await TmuxPane.start({ jobId: running, command: 'sleep 300', env: ws.env, server });
    const b = await TmuxPane.start({ jobId: ended, command: 'exit 3', env: ws.env, server });
    await b.exited;
    // A person's own session is not MAM's, whatever its name.
    spawnSync('tmux', ['new-session', '-d', '-s', 'mam-mine'], { env: ws.env });

    const table = await runBinAsync('mam', ['sessions'], ws);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SESSION\s+JOB\s+STATUS\s+AGENT\s+CREATED\s+ATTACH$/);
    expect(lines).toHaveLength(3);
    expect(lines.find((l) => l.startsWith(`mam-${running} `))).toMatch(
      new RegExp(`^mam-${running}\\s+${running}\\s+pending\\s+running\\s+\\S+Z\\s+tmux attach -t mam-${running}$`),
    );
    expect(lines.find((l) => l.startsWith(`mam-${ended} `))).toMatch(/\s+pending\s+exited \(3\)\s+/);

    // The record is gone: the pane is still listed, its job's status unknown.
    rmSync(join(ws.root, '.mam', 'jobs', `${ended}.json`));
    const json = await runBinAsync('mam', ['sessions', '--json'], ws);
    expect(json.code).toBe(0);
    const rows = json.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((r) => r.job_id).sort()).toEqual([running, ended].sort());
    expect(rows.find((r) => r.job_id === running)).toMatchObject({
      session: `mam-${running}`,
      status: 'pending',
      pid: a.pid,
      dead: false,
      exit_status: null,
      exit_signal: null,
      attach: `tmux attach -t mam-${running}`,
    });
    expect(rows.find((r) => r.job_id === ended)).toMatchObject({ status: 'unknown', dead: true, exit_status: 3 });

    await a.stop();
    await b.stop();
    expect(await runBinAsync('mam', ['sessions', '--json'], ws)).toMatchObject({ code: 0, stdout: '' });
  });
});
