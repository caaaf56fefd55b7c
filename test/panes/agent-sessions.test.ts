import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it, onTestFinished } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { makeWorkspace, runBinAsync } from '../helpers/cli.ts';
import { spawnBin } from '../core/registry/fixtures/processes.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';
import { waitUntil } from '../helpers/wait.ts';
import { printedEvents, registeredJob, sessionWorld } from './session-fixtures.ts';
import { describeWithTmux } from './tmux-fixtures.ts';

/**
 * Named sessions end to end (issue 25): `mam session create|stop|resume|list` and
 * `mam delegate --session`, on a real tmux server of the test's own, a real broker, the built bins,
 * and interactive stand-ins of Claude Code and Codex that run the hooks MAM configured.
 */
describeWithTmux('named agent sessions', () => {
  let broker: TestBroker;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  const jobRecord = (root: string, id: string) => JSON.parse(readFileSync(path.join(root, '.mam', 'jobs', `${id}.json`), 'utf8')) as Record<string, unknown>;

  it('a Claude session takes three jobs in sequence, is stopped and resumed with its conversation, then purged', { timeout: 120_000 }, async () => {
    const w = sessionWorld(broker);
    const created = await w.mam(['session', 'create', '--name', 'c1', '--agent', 'claude']);
    expect(created.code, created.stderr).toBe(0);
    const session = JSON.parse(created.stdout);
    const [first] = w.starts();
    // The agent's own session id, from its SessionStart hook payload.
    expect(session).toMatchObject({ name: 'c1', state: 'running', agent: 'claude', idle: true, current_job: null, tmux_session: 'mam-session-c1' });
    expect(session.agent_session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(first?.argv.slice(0, 1)).toEqual(['--settings']);

    const jobs: string[] = [];
    for (const brief of ['first', 'second', 'third']) {
      const r = await w.mam(['delegate', '--json', '--session', 'c1', '--brief', brief]);
      expect(r.code, r.stderr).toBe(0);
      expect(printedEvents(r.stdout)).toEqual(['started', 'completed']);
      jobs.push(registeredJob(r.stderr));
    }
    // One agent process took all three, in order, in one conversation.
    const turns = w.turns();
    expect(turns.map((t) => [t.brief, t.turn])).toEqual([
      ['first', 1],
      ['second', 2],
      ['third', 3],
    ]);
    expect(new Set(turns.map((t) => t.pid))).toEqual(new Set([first!.pid]));
    for (const id of jobs) expect(jobRecord(w.ws.root, id)).toMatchObject({ status: 'completed', agent_session: 'c1' });
    expect((await w.list())[0]).toMatchObject({ name: 'c1', state: 'running', idle: true, current_job: null, jobs_done: 3 });
    // What the watcher printed is kept beside the job.
    const shown = await w.mam(['show', '--job', jobs[1]!, '--events']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(printedEvents(shown.stdout)).toEqual(['started', 'completed']);

    const stopped = await w.mam(['session', 'stop', 'c1']);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ state: 'stopped', agent_session_id: session.agent_session_id, tmux_session: null });
    expect(w.tmux.tmux('has-session', '-t', '=mam-session-c1').code).not.toBe(0);
    // A stopped session takes no job: exit 5, the job cancelled undelivered.
    const refused = await w.mam(['delegate', '--json', '--session', 'c1', '--brief', 'while stopped']);
    expect(refused.code, refused.stderr).toBe(5);
    expect(jobRecord(w.ws.root, registeredJob(refused.stderr))).toMatchObject({ status: 'cancelled', detail: 'session_not_running' });

    const resumed = await w.mam(['session', 'resume', 'c1']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ state: 'running', idle: true, generation: 2, agent_session_id: session.agent_session_id });
    // Claude Code's own resume, with the id from the SessionStart hook.
    const second = w.starts()[1]!;
    expect(second.argv.slice(-2)).toEqual(['--resume', session.agent_session_id]);
    const fourth = await w.mam(['delegate', '--json', '--session', 'c1', '--brief', 'fourth']);
    expect(fourth.code, fourth.stderr).toBe(0);
    // A new process, the same conversation: its fourth prompt.
    expect(w.turns().at(-1)).toMatchObject({ pid: second.pid, session_id: session.agent_session_id, turn: 4, brief: 'fourth' });

    const purged = await w.mam(['session', 'stop', 'c1', '--purge-conversation']);
    expect(purged.code, purged.stderr).toBe(0);
    expect(JSON.parse(purged.stdout)).toMatchObject({ state: 'terminated', agent_session_id: null });
    expect(existsSync(path.join(w.stateDir, `${session.agent_session_id}.jsonl`))).toBe(false);
    const again = await w.mam(['session', 'resume', 'c1']);
    expect(again.code).toBe(5);
    expect(again.stderr).toMatch(/^ERROR: refused: session c1: has no conversation to resume/);
    // Everything sessions wrote under .mam is the user's alone, as the job records are (contract §7).
    expect(loosePlaces(path.join(w.ws.root, '.mam'))).toEqual([]);
  });

  it('a busy session: the next delegate gives up after --wait-idle with exit 5 and a cancelled/session_busy job', { timeout: 60_000 }, async () => {
    const w = sessionWorld(broker);
    expect((await w.mam(['session', 'create', '--name', 'b1', '--agent', 'claude'])).code).toBe(0);
    const long = w.mam(['delegate', '--json', '--session', 'b1', '--brief', 'sleep:3000']);
    expect(await waitUntil(() => w.turns().length === 1, 20_000)).toBe(true);
    const busy = await w.mam(['delegate', '--json', '--session', 'b1', '--wait-idle', '0.5', '--brief', 'too soon']);
    expect(busy.code, busy.stderr).toBe(5);
    expect(busy.stdout).toBe('');
    const id = registeredJob(busy.stderr);
    expect(busy.stderr).toContain(`job ${id}: closed cancelled (session_busy: session b1 is busy with job`);
    expect(jobRecord(w.ws.root, id)).toMatchObject({ status: 'cancelled', detail: 'session_busy', agent_session: 'b1' });
    const done = await long;
    expect(done.code, done.stderr).toBe(0);
    // The cancelled job never reached the agent, and its watcher printed nothing.
    expect(w.turns().map((t) => t.brief)).toEqual(['sleep:3000']);
    const shown = await w.mam(['show', '--job', id, '--events']);
    expect(shown).toMatchObject({ code: 0, stdout: '' });
    expect(shown.stderr).toBe(`warning: job ${id}: no watcher output kept (it was not run by mam delegate)\n`);

    // The agent itself dies mid-job (its process exits 3): the delegate sees it, the job is an error.
    const crash = await w.mam(['delegate', '--json', '--session', 'b1', '--brief', 'crash']);
    expect(crash.code, crash.stderr).toBe(1);
    expect(jobRecord(w.ws.root, registeredJob(crash.stderr))).toMatchObject({
      status: 'error',
      detail: 'session_terminated: session b1: its agent exited with code 3',
    });
    const table = await w.mam(['session', 'list']);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+STATE\s+AGENT\s+PANE\s+JOB\s+DONE\s+LAST EVENT$/);
    expect(table.stdout.split('\n')[1]).toMatch(/^b1\s+terminated\s+claude\s+-\s+-\s+1\s+terminated \S+Z its agent exited with code 3$/);
  });

  it('two delegates racing for one idle session: exactly one delivers, the other exits 5 (session_busy)', { timeout: 60_000 }, async () => {
    const w = sessionWorld(broker);
    expect((await w.mam(['session', 'create', '--name', 'r1', '--agent', 'claude'])).code).toBe(0);
    const [a, b] = await Promise.all(
      ['sleep:2000', 'sleep:2000'].map((brief) => w.mam(['delegate', '--json', '--session', 'r1', '--wait-idle', '0.3', '--brief', brief])),
    );
    expect([a!.code, b!.code].sort()).toEqual([0, 5]);
    const loser = a!.code === 5 ? a! : b!;
    expect(jobRecord(w.ws.root, registeredJob(loser.stderr))).toMatchObject({ status: 'cancelled', detail: 'session_busy' });
    expect(w.turns()).toHaveLength(1);
    expect((await w.list())[0]).toMatchObject({ state: 'running', idle: true, jobs_done: 1 });
  });

  it('a shell session runs jobs in sequence; `tmux kill-session` mid-job: session terminated, job error, within seconds', { timeout: 60_000 }, async () => {
    const w = sessionWorld(broker);
    const created = await w.mam(['session', 'create', '--name', 'sh1', '--agent', 'shell']);
    expect(created.code, created.stderr).toBe(0);
    const ok = await w.mam(['delegate', '--json', '--session', 'sh1', '--brief', 'test "$JOB_ID" != ""']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(printedEvents(ok.stdout)).toEqual(['started', 'completed']);
    const failed = await w.mam(['delegate', '--json', '--session', 'sh1', '--brief', 'exit 3']);
    expect(failed.code).toBe(1);
    expect(printedEvents(failed.stdout)).toEqual(['started', 'error']);
    const third = await w.mam(['delegate', '--json', '--session', 'sh1', '--brief', 'true']);
    expect(third.code, third.stderr).toBe(0);
    expect((await w.list())[0]).toMatchObject({ state: 'running', idle: true, jobs_done: 3, current_job: null });
    // Listed from a shell whose plain `tmux` reaches another server: the session is looked for on its own.
    const elsewhere = await runBinAsync('mam', ['session', 'list', '--json'], w.ws, { env: { TMUX_TMPDIR: tempDirForTest('mam-tmux-other-') } });
    expect(JSON.parse(elsewhere.stdout)).toMatchObject({ state: 'running', idle: true });
    // `mam sessions` lists the one-job panes of --pane tmux only, not named sessions.
    expect((await w.mam(['sessions', '--json'])).stdout).toBe('');

    const running = w.mam(['delegate', '--json', '--session', 'sh1', '--brief', 'sleep 60']);
    expect(await waitUntil(() => readSession(w.ws.root).current_job !== null, 10_000)).toBe(true);
    const held = readSession(w.ws.root).current_job as string;
    expect(await waitUntil(() => jobRecord(w.ws.root, held).status === 'running', 10_000)).toBe(true);
    const killedAt = Date.now();
    expect(w.tmux.tmux('kill-session', '-t', '=mam-session-sh1').code).toBe(0);
    const r = await running;
    const seenMs = Date.now() - killedAt;
    expect(r.code).toBe(1);
    expect(seenMs).toBeLessThan(5_000);
    process.stderr.write(`[sessions] killed pane seen and job closed in ${seenMs} ms\n`);
    expect(jobRecord(w.ws.root, held)).toMatchObject({ status: 'error' });
    expect(String(jobRecord(w.ws.root, held).detail)).toMatch(/^session_terminated: session sh1: tmux pane %\d+ of mam-session-sh1 is gone$/);
    expect((await w.list())[0]).toMatchObject({ state: 'terminated', current_job: null, idle: false });
  });

  it('a delegate killed -9 mid-job: the turn still ends through the hooks, the job gets its outcome, the session takes the next job', {
    timeout: 60_000,
  }, async () => {
    const w = sessionWorld(broker);
    expect((await w.mam(['session', 'create', '--name', 'k1', '--agent', 'claude'])).code).toBe(0);
    const delegate = spawnBin('mam', ['delegate', '--json', '--session', 'k1', '--brief', 'sleep:1500'], w.ws);
    expect(await waitUntil(() => w.turns().length === 1, 20_000)).toBe(true);
    const held = readSession(w.ws.root).current_job as string;
    expect(delegate.kill()).toBe(true);
    expect((await delegate.done).signal).toBe('SIGKILL');
    // Nobody watches the job now; the agent's Stop hook still reports it and frees the session.
    expect(await waitUntil(() => readSession(w.ws.root).idle === true, 15_000)).toBe(true);
    expect(jobRecord(w.ws.root, held)).toMatchObject({ status: 'completed' });
    const next = await w.mam(['delegate', '--json', '--session', 'k1', '--brief', 'after']);
    expect(next.code, next.stderr).toBe(0);
    expect((await w.list())[0]).toMatchObject({ jobs_done: 2, idle: true });
  });

  it('a pane killed while nobody watches: `mam session list` finds it and errors the job it held', { timeout: 60_000 }, async () => {
    const w = sessionWorld(broker);
    expect((await w.mam(['session', 'create', '--name', 'u1', '--agent', 'claude'])).code).toBe(0);
    const running = w.mam(['delegate', '--json', '--session', 'u1', '--brief', 'sleep:60000']);
    expect(await waitUntil(() => w.turns().length === 1, 20_000)).toBe(true);
    const held = readSession(w.ws.root).current_job as string;
    // The agent crashes: its process ends, tmux keeps the dead pane.
    process.kill(w.turns()[0]!.pid, 'SIGKILL');
    const listed = await w.list();
    expect(listed[0]).toMatchObject({ state: 'terminated', current_job: null });
    expect(String(listed[0]!.detail)).toMatch(/agent/);
    expect(jobRecord(w.ws.root, held)).toMatchObject({ status: 'error' });
    expect((await running).code).toBe(1);
  });

  it("Gemini (no hooks MAM sets): idle at once, each job's end frees the session, resume takes the latest conversation", { timeout: 60_000 }, async () => {
    const w = sessionWorld(broker);
    const created = await w.mam(['session', 'create', '--name', 'g1', '--agent', 'gemini']);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ idle: true, agent_session_id: null });
    // No hook says when Gemini is up: MAM types at once, and the stand-in must be reading by then.
    expect(await waitUntil(() => w.starts().length === 1, 10_000)).toBe(true);
    for (const brief of ['one', 'two']) {
      const r = await w.mam(['delegate', '--json', '--session', 'g1', '--brief', brief]);
      expect(r.code, r.stderr).toBe(0);
      expect(printedEvents(r.stdout)).toEqual(['started', 'completed']);
    }
    expect((await w.list())[0]).toMatchObject({ state: 'running', idle: true, jobs_done: 2 });
    expect((await w.mam(['session', 'stop', 'g1'])).code).toBe(0);
    expect((await w.mam(['session', 'resume', 'g1'])).code).toBe(0);
    expect(await waitUntil(() => w.starts().length === 2, 10_000)).toBe(true);
    expect(w.starts()[1]!.argv).toEqual(['--resume', 'latest']);
    const three = await w.mam(['delegate', '--json', '--session', 'g1', '--brief', 'three']);
    expect(three.code, three.stderr).toBe(0);
    expect(w.turns().at(-1)).toMatchObject({ turn: 3, brief: 'three' });
    expect((await w.mam(['session', 'stop', 'g1'])).code).toBe(0);
  });

  it("Codex (notify only): idle after its start delay, `started` as the job is typed, the id from notify's thread-id (not its title thread's) for `codex resume <id>`", {
    timeout: 60_000,
  }, async () => {
    const w = sessionWorld(broker);
    // Not trusted in Codex's config.toml: refused in one line, exit 5, nothing started or written.
    const refused = await w.mam(['session', 'create', '--name', 'x1', '--agent', 'codex']);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(
      /^ERROR: refused: session x1: Codex does not trust \S+ in \S+config\.toml \(no such file\), .* trust_level = "trusted" to that file\n$/,
    );
    expect(w.starts()).toEqual([]);
    expect(existsSync(path.join(w.ws.root, '.mam', 'jobs', 'sessions', 'x1.json'))).toBe(false);
    // What a person who ran Codex here once answered (HOME is the workspace: ~/.codex/config.toml).
    mkdirSync(path.join(w.ws.root, '.codex'));
    writeFileSync(path.join(w.ws.root, '.codex', 'config.toml'), `[projects.${JSON.stringify(w.ws.root)}]\ntrust_level = "trusted"\n`);
    const t0 = Date.now();
    const created = await w.mam(['session', 'create', '--name', 'x1', '--agent', 'codex']);
    expect(created.code, created.stderr).toBe(0);
    // No hook says Codex is up: idle after the start delay, past the stand-in's deaf first second.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3_000);
    expect(JSON.parse(created.stdout)).toMatchObject({ idle: true, agent_session_id: null, last_event: { type: 'agent_ready' } });
    expect(w.starts()[0]!.argv.filter((a) => a.startsWith('hooks.'))).toEqual([]);
    const job = await w.mam(['delegate', '--json', '--session', 'x1', '--brief', 'one']);
    expect(job.code, job.stderr).toBe(0);
    expect(printedEvents(job.stdout)).toEqual(['started', 'completed']);
    const id = w.turns()[0]!.session_id;
    expect((await w.list())[0]).toMatchObject({ idle: true, current_job: null, jobs_done: 1, agent_session_id: id });
    expect((await w.mam(['session', 'stop', 'x1'])).code).toBe(0);
    const resumed = await w.mam(['session', 'resume', 'x1']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(w.starts()[1]!.argv.slice(0, 2)).toEqual(['resume', id]);
    const two = await w.mam(['delegate', '--json', '--session', 'x1', '--brief', 'two']);
    expect(two.code, two.stderr).toBe(0);
    expect(w.turns().at(-1)).toMatchObject({ session_id: id, turn: 2, brief: 'two' });
    expect((await w.list())[0]).toMatchObject({ idle: true, jobs_done: 2, agent_session_id: id });
    expect((await w.mam(['session', 'stop', 'x1'])).code).toBe(0);
  });
});

/** Files under `dir` not 0600 and folders not 0700, as `path mode` lines. */
function loosePlaces(dir: string): string[] {
  const loose: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const file = path.join(entry.parentPath, entry.name);
    const mode = statSync(file).mode & 0o777;
    if (mode !== (entry.isDirectory() ? 0o700 : 0o600)) loose.push(`${path.relative(dir, file)} ${mode.toString(8)}`);
  }
  return loose;
}

function readSession(root: string): Record<string, unknown> {
  const dir = path.join(root, '.mam', 'jobs', 'sessions');
  const [file] = readdirSync(dir).filter((f) => f.endsWith('.json'));
  return JSON.parse(readFileSync(path.join(dir, file!), 'utf8'));
}

it('mam session create without tmux: one line saying what to install, exit 1, nothing written', async () => {
  const ws = makeWorkspace({ PATH: tempDirForTest('mam-empty-path-') });
  onTestFinished(() => ws.cleanup());
  const r = await runBinAsync('mam', ['session', 'create', '--name', 'n1', '--agent', 'shell'], ws);
  expect(r).toMatchObject({ code: 1, stdout: '', stderr: 'ERROR: mam session: tmux is not installed (apt install tmux)\n' });
  expect(existsSync(path.join(ws.root, '.mam', 'jobs', 'sessions'))).toBe(false);
});
