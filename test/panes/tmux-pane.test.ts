import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { listMamPanes } from '../../src/core/panes/mam-panes.ts';
import { PaneExists, TmuxMissing, TmuxPane, type TmuxPaneStart } from '../../src/core/panes/tmux-pane.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';
import { waitUntil } from '../helpers/wait.ts';
import { STAND_IN_COMMAND, describeWithTmux, type IsolatedTmux, isolatedTmux } from './tmux-fixtures.ts';

interface AgentReport {
  prompt: string;
  env: Record<string, string>;
  cwd: string;
  isTTY: boolean;
}

/** Starts the stand-in agent in a pane of this test's own tmux server; its stop() runs when the test ends. */
async function startAgent(t: IsolatedTmux, agentEnv: Record<string, string>, extra: Partial<TmuxPaneStart> = {}) {
  const dir = tempDirForTest('mam-pane-agent-');
  const out = join(dir, 'report.json');
  const ready = join(dir, 'ready');
  const pane = await TmuxPane.start({
    jobId: 'abcd1234',
    command: STAND_IN_COMMAND,
    env: { ...t.env, PANE_AGENT_OUT: out, PANE_AGENT_READY: ready, ...agentEnv },
    cwd: dir,
    server: t.server,
    ...extra,
  });
  const report = async (): Promise<AgentReport> => {
    expect(await waitUntil(() => existsSync(out), 10_000)).toBe(true);
    return JSON.parse(readFileSync(out, 'utf8')) as AgentReport;
  };
  return { pane, dir, out, ready, report };
}

/** Ended: no such process, or a zombie (an orphan waits for init to reap it, which takes a while in some containers). */
const gone = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) === 'Z';
  } catch {
    return true;
  }
};

describeWithTmux('TmuxPane: an agent in a detached tmux session', () => {
  it('types the prompt into the pane verbatim: quotes, $VAR and backslashes reach the agent as typed', async () => {
    const t = isolatedTmux();
    const prompt = `Fix "the bug" in it's $HOME \\n; echo $(whoami) \`id\``;
    const { pane, report } = await startAgent(t, { PANE_AGENT_MODE: 'lines', PANE_AGENT_EXIT: '7' }, { prompt });
    const got = await report();
    expect(got.prompt).toBe(prompt);
    expect(got.isTTY).toBe(true);
    expect(await pane.exited).toEqual({ code: 7, signal: null });
    await pane.stop();
  });

  it('a two-line prompt arrives as two lines to a line-reading agent, in order', async () => {
    const t = isolatedTmux();
    const prompt = 'first line with "quotes"\nsecond line with $PATH';
    const { pane, report } = await startAgent(t, { PANE_AGENT_MODE: 'lines', PANE_AGENT_LINES: '2' }, { prompt: `${prompt}\n` });
    expect((await report()).prompt).toBe(prompt);
    expect(await pane.exited).toEqual({ code: 0, signal: null });
    await pane.stop();
  });

  it('a multi-line prompt is one bracketed paste for a TUI agent, submitted by the Enter after it', async () => {
    const t = isolatedTmux();
    const { pane, ready, report } = await startAgent(t, { PANE_AGENT_MODE: 'paste', PANE_AGENT_EXIT: '3' });
    // The agent says (in a file) when its terminal is in paste mode; the test types only then.
    expect(await waitUntil(() => existsSync(ready), 10_000)).toBe(true);
    const prompt = 'line one: "a" \'b\' $VAR\n\nline three; exit 1';
    await pane.typePrompt(prompt);
    expect((await report()).prompt).toBe(prompt);
    expect(await pane.exited).toEqual({ code: 3, signal: null });
    await pane.stop();
  });

  it("the agent gets exactly the job's environment: nothing of the tmux server's, and the pane's own TERM", async () => {
    const t = isolatedTmux();
    // A server that already runs, with a variable in its global environment that is not the job's.
    t.tmux('new-session', '-d', '-s', 'someone-else');
    t.tmux('set-environment', '-g', 'MAM_TEST_SERVER_ONLY', 'leak');
    const secret = `tok'en "with" $quotes\nand a line`;
    const { pane, dir, report } = await startAgent(t, { PANE_AGENT_MODE: 'lines', MAM_DISPATCH_TOKEN: secret, TERM: 'caller-term' }, { prompt: 'go' });
    const got = await report();
    expect(got.env.MAM_DISPATCH_TOKEN).toBe(secret);
    expect(got.env.PANE_AGENT_MODE).toBe('lines');
    expect(got.env.MAM_TEST_SERVER_ONLY).toBeUndefined();
    expect(got.env.TERM).not.toBe('caller-term');
    expect(got.env.TMUX_PANE).toMatch(/^%\d+$/);
    expect(got.cwd).toBe(dir);
    // The token was in no argv: tmux's record of the pane's command holds only the file's name.
    expect(t.tmux('list-panes', '-a', '-F', '#{pane_start_command}').stdout).not.toContain('tok');
    await pane.exited;
    await pane.stop();
  });

  it('stop() SIGTERMs the process group, closes the session and resolves with the exit', async () => {
    const t = isolatedTmux();
    const { pane, ready, report } = await startAgent(t, { PANE_AGENT_MODE: 'hang' });
    expect(await waitUntil(() => existsSync(ready), 10_000)).toBe(true);
    const pids = (await report()) as unknown as { agent: number; child: number };
    expect(gone(pids.child)).toBe(false);
    expect(await pane.stop(5_000)).toEqual({ code: null, signal: 'SIGTERM' });
    expect(await waitUntil(() => gone(pids.agent) && gone(pids.child), 5_000)).toBe(true);
    expect(t.tmux('has-session', '-t', `=${pane.session}`).code).not.toBe(0);
    expect(await listMamPanes(t.server)).toEqual([]);
  });

  it('a dead pane stays (remain-on-exit) with its exit status until the job closes it', async () => {
    const t = isolatedTmux();
    const pane = await TmuxPane.start({ jobId: 'dead0001', command: 'exit 42', env: t.env, server: t.server });
    expect(await pane.exited).toEqual({ code: 42, signal: null });
    const [listed] = await listMamPanes(t.server);
    expect(listed).toMatchObject({ session: 'mam-dead0001', jobId: 'dead0001', pid: pane.pid, dead: true, exitStatus: 42, exitSignal: null });
    await pane.stop();
    expect(await listMamPanes(t.server)).toEqual([]);
  });

  it('an agent that exits at once still reports its status (tmux 3.3 at times misses that SIGCHLD)', async () => {
    const t = isolatedTmux();
    t.tmux('new-session', '-d', '-s', 'someone-else');
    for (let round = 0; round < 20; round++) {
      const pane = await TmuxPane.start({ jobId: 'ee000001', command: `exit ${round % 5}`, env: t.env, server: t.server, pollMs: 50 });
      expect(await pane.exited).toEqual({ code: round % 5, signal: null });
      await pane.stop();
    }
  });

  it("typing into a pane whose agent has ended does nothing (and does not crash tmux 3.3's server)", async () => {
    const t = isolatedTmux();
    t.tmux('new-session', '-d', '-s', 'someone-else');
    const pane = await TmuxPane.start({ jobId: 'ab000001', command: 'exit 9', env: t.env, server: t.server, prompt: 'too late' });
    expect(await pane.exited).toEqual({ code: 9, signal: null });
    await pane.typePrompt('line one\nline two');
    expect(t.tmux('has-session', '-t', '=someone-else').code).toBe(0);
    expect(t.tmux('list-buffers').stdout).toBe('');
    await pane.stop();
  });

  it('a session killed by a person ends the wait: exited resolves (SIGHUP) instead of hanging', async () => {
    const t = isolatedTmux();
    const pane = await TmuxPane.start({ jobId: 'feed0001', command: 'sleep 300', env: t.env, server: t.server });
    t.tmux('kill-session', '-t', '=mam-feed0001');
    expect(await pane.exited).toEqual({ code: null, signal: 'SIGHUP' });
    await pane.stop();
  });

  it('listMamPanes lists only the sessions MAM started, with the attach line', async () => {
    const t = isolatedTmux();
    t.tmux('new-session', '-d', '-s', 'mam-notmine');
    const a = await TmuxPane.start({ jobId: 'aaaa0001', command: 'sleep 300', env: t.env, server: t.server });
    // A person splits the agent's window: the agent's pane is still the one listed.
    t.tmux('split-window', '-d', '-t', '=mam-aaaa0001:');
    const panes = await listMamPanes(t.server);
    expect(panes).toHaveLength(1);
    expect(panes[0]).toMatchObject({ session: 'mam-aaaa0001', jobId: 'aaaa0001', pid: a.pid, dead: false, exitStatus: null, exitSignal: null });
    expect(Date.parse(panes[0]!.created)).not.toBeNaN();
    expect(panes[0]!.attach).toBe('tmux attach -t mam-aaaa0001');
    await a.stop();
  });

  it('attachCommand: the plain line on the default server, with -S when MAM ran inside another tmux server', async () => {
    const t = isolatedTmux();
    const pane = await TmuxPane.start({ jobId: 'bbbb0001', command: 'sleep 300', env: t.env, server: t.server });
    expect(pane.attachCommand()).toBe('tmux attach -t mam-bbbb0001');
    // The attach target names this session exactly: the same line with has-session finds it.
    expect(t.tmux('has-session', '-t', 'mam-bbbb0001').code).toBe(0);
    await pane.stop();

    // $TMUX (MAM run from inside tmux) wins over TMUX_TMPDIR: the session lands on that server,
    // which a plain `tmux` in another terminal would not reach.
    const socket = join(t.dir, 'inner.sock');
    t.tmux('-S', socket, 'new-session', '-d', '-s', 'outer');
    const inside = { ...t.env, TMUX: `${socket},1,0`, TMUX_TMPDIR: tempDirForTest('mam-tmux-other-') };
    const nested = await TmuxPane.start({ jobId: 'bbbb0002', command: 'sleep 300', env: t.env, server: { env: inside } });
    expect(nested.attachCommand()).toBe(`tmux -S ${socket} attach -t mam-bbbb0002`);
    expect(t.tmux('-S', socket, 'has-session', '-t', '=mam-bbbb0002').code).toBe(0);
    await nested.stop();
    t.tmux('-S', socket, 'kill-server');
  });

  it('refuses to start over a live session of the same job, and replaces a dead one from an earlier attempt', async () => {
    const t = isolatedTmux();
    const live = await TmuxPane.start({ jobId: 'cccc0001', command: 'sleep 300', env: t.env, server: t.server });
    await expect(TmuxPane.start({ jobId: 'cccc0001', command: 'true', env: t.env, server: t.server })).rejects.toBeInstanceOf(PaneExists);
    await live.stop();

    const dead = await TmuxPane.start({ jobId: 'cccc0002', command: 'exit 1', env: t.env, server: t.server });
    await dead.exited; // MAM died here without closing: the dead pane stays
    const again = await TmuxPane.start({ jobId: 'cccc0002', command: 'exit 2', env: t.env, server: t.server });
    expect(await again.exited).toEqual({ code: 2, signal: null });
    await again.stop();
  });
});

it('without tmux: TmuxMissing, one line that says what to install', async () => {
  const env = { ...process.env, PATH: tempDirForTest('mam-empty-path-') };
  const start = TmuxPane.start({ jobId: 'dddd0001', command: 'true', env, server: { env } });
  await expect(start).rejects.toBeInstanceOf(TmuxMissing);
  await expect(start).rejects.toThrow(/^--pane tmux: tmux is not installed \(apt install tmux\)$/);
  await expect(listMamPanes({ env })).rejects.toBeInstanceOf(TmuxMissing);
});
