import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { launchPaths } from '../../../src/core/agents/agent-launch.ts';
import { Registry } from '../../../src/core/registry/registry.ts';
import { foreignThread, nextSessionState, sessionHook } from '../../../src/core/sessions/session-hooks.ts';
import { CODEX_START_DELAY_MS, claudeSessionSettings, sessionLaunch, shellJobScript } from '../../../src/core/sessions/session-launch.ts';
import { tempDirForTest } from '../../helpers/temp-dir.ts';
import type { SessionRecord } from '../../../src/core/sessions/session-record.ts';

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/agents/${name}`, import.meta.url), 'utf8');
/** The session id in the captured SessionStart payload (recaptured fixtures change it). */
const claudeSessionId = (JSON.parse(fixture('claude-session-start.json')) as { session_id: string }).session_id;

const session = (over: Partial<SessionRecord> = {}): SessionRecord => ({
  name: 's1',
  agent: 'claude',
  state: 'running',
  workdir: '/w',
  created_at: '2026-12-07T00:00:00.000Z',
  updated_at: '2026-12-07T00:00:00.000Z',
  generation: 2,
  tmux_session: 'mam-session-s1',
  pane_id: '%1',
  pane_pid: 10,
  agent_session_id: null,
  idle: false,
  current_job: null,
  jobs_done: 0,
  last_event: null,
  detail: null,
  ...over,
});

describe('sessionHook: what a hook means for a session (recorded payloads)', () => {
  it('Claude SessionStart: ready, its session_id and transcript, nothing published', () => {
    const h = sessionHook('claude', fixture('claude-session-start.json'));
    expect(h).toMatchObject({ turn: 'ready', agentSessionId: claudeSessionId, action: { skip: expect.any(String) } });
    expect(h.transcriptPath).toMatch(/\.jsonl$/);
  });

  it.each([
    ['claude-user-prompt-submit.json', 'claude', 'prompt', { publish: 'started' }],
    ['claude-stop.json', 'claude', 'end', { publish: 'completed' }],
    ['claude-stop-failure.json', 'claude', 'end', { publish: 'error' }],
    ['claude-notification-idle-prompt.json', 'claude', 'idle', { skip: expect.any(String) }],
    ['claude-notification-permission-prompt.json', 'claude', 'other', { publish: 'permission_required' }],
    ['codex-session-start.json', 'codex', 'ready', { skip: expect.any(String) }],
    ['codex-user-prompt-submit.json', 'codex', 'prompt', { publish: 'started' }],
  ] as const)('%s → %s', (file, from, turn, action) => {
    expect(sessionHook(from, fixture(file))).toMatchObject({ turn, action });
  });

  it('Codex notify: the end of a turn, of the thread it names, for the prompts it took', () => {
    expect(sessionHook('codex-notify', fixture('codex-notify-agent-turn-complete.json'))).toMatchObject({
      turn: 'end',
      action: { publish: 'completed' },
      thread: { id: '01a24ff6-eb0e-70c0-a503-fbd48e530b80', inputs: ['Say something.'] },
    });
  });

  it('wrapper (a shell session): start → prompt, exit → end with the outcome by exit code', () => {
    expect(sessionHook('wrapper', '', { on: 'start' })).toMatchObject({ turn: 'prompt', action: { publish: 'started' } });
    expect(sessionHook('wrapper', '', { on: 'exit', exitCode: 3 })).toMatchObject({ turn: 'end', action: { publish: 'error' } });
  });

  it('bad input is refused as for a job hook (exit 64)', () => {
    expect(() => sessionHook('claude', 'not json')).toThrow(/not JSON/);
  });
});

describe("foreignThread: which Codex notify is the session's turn", () => {
  /** A registry in a folder of the test's own, holding job abcd1234's prompt file as a delivery wrote it. */
  const registryWithPrompt = (): Registry => {
    const dir = tempDirForTest('mam-foreign-thread-');
    const dirs = { registryDir: path.join(dir, 'reg'), logDir: path.join(dir, 'logs') };
    for (const d of Object.values(dirs)) mkdirSync(d, { mode: 0o700 });
    const registry = new Registry(dirs);
    const prompt = launchPaths(registry, 'abcd1234').promptFile;
    mkdirSync(path.dirname(prompt), { recursive: true });
    writeFileSync(prompt, 'JOB abcd1234\nDo the thing.\n');
    return registry;
  };

  it('an id known: only that thread counts', () => {
    const registry = registryWithPrompt();
    const known = session({ agent: 'codex', agent_session_id: 't-main', current_job: 'abcd1234' });
    expect(foreignThread(registry, known, 'abcd1234', { id: 't-main', inputs: [] })).toBeUndefined();
    expect(foreignThread(registry, known, 'abcd1234', { id: 't-title', inputs: ['JOB abcd1234\nDo the thing.'] })).toMatch(/not of the session's t-main/);
  });
  it('no id yet: the thread that took the very prompt MAM typed, not the title thread quoting it', () => {
    const registry = registryWithPrompt();
    const fresh = session({ agent: 'codex', current_job: 'abcd1234' });
    expect(foreignThread(registry, fresh, 'abcd1234', { id: 't-main', inputs: ['JOB abcd1234\nDo the thing.'] })).toBeUndefined();
    const title = { id: 't-title', inputs: ['Generate a concise, single-line task title …\n\nUser prompt:\nJOB abcd1234\nDo the thing.'] };
    expect(foreignThread(registry, fresh, 'abcd1234', title)).toMatch(/title thread/);
    expect(foreignThread(registry, fresh, null, { id: 't-main', inputs: [] })).toMatch(/holds no job/);
    expect(foreignThread(registry, fresh, 'ffff0000', { id: 't-main', inputs: [] })).toMatch(/no prompt file/);
  });
  it('the end of a turn records the thread as the conversation, once', () => {
    const end = { turn: 'end' as const, action: { publish: 'completed' as const, detail: 'x' }, thread: { id: 't-main', inputs: [] } };
    expect(nextSessionState(session({ agent: 'codex', current_job: 'abcd1234' }), 2, 'abcd1234', end)).toMatchObject({
      agent_session_id: 't-main',
      idle: true,
    });
    expect(nextSessionState(session({ agent: 'codex', agent_session_id: 'old', current_job: 'abcd1234' }), 2, 'abcd1234', end)).toMatchObject({
      agent_session_id: 'old',
    });
  });
});

describe('nextSessionState', () => {
  const end = sessionHook('claude', fixture('claude-stop.json'));
  it('the end of the held job frees the session and counts the job', () => {
    expect(nextSessionState(session({ current_job: 'abcd1234' }), 2, 'abcd1234', end)).toMatchObject({ idle: true, current_job: null, jobs_done: 1 });
  });
  it('a late end of another job, or a hook of another launch, changes nothing', () => {
    expect(nextSessionState(session({ current_job: 'abcd1234' }), 2, 'ffff0000', end)).toBeUndefined();
    expect(nextSessionState(session({ current_job: 'abcd1234' }), 1, 'abcd1234', end)).toBeUndefined();
    expect(nextSessionState(session({ state: 'stopped' }), 2, null, end)).toBeUndefined();
  });
  it('ready records the id and is idle only when no job is held; idle_prompt never frees a held job', () => {
    const ready = sessionHook('claude', fixture('claude-session-start.json'));
    expect(nextSessionState(session(), 2, null, ready)).toMatchObject({ idle: true, agent_session_id: claudeSessionId });
    const idle = sessionHook('claude', fixture('claude-notification-idle-prompt.json'));
    expect(nextSessionState(session({ current_job: 'abcd1234' }), 2, 'abcd1234', idle)).toBeUndefined();
    expect(nextSessionState(session(), 2, null, idle)).toMatchObject({ idle: true });
  });
});

describe('sessionLaunch: the CLI and its own resume', () => {
  const base = { name: 's1', generation: 3, privateDir: '/p', mam: ['node', '/mam.js'] };
  it.each([
    ['claude', undefined, 'exec claude --settings /p/claude-settings.json'],
    ['claude', { agentSessionId: 'abc-1' }, 'exec claude --settings /p/claude-settings.json --resume abc-1'],
    ['claude', { agentSessionId: null }, 'exec claude --settings /p/claude-settings.json --continue'],
    ['gemini', { agentSessionId: 'g1' }, 'exec gemini --resume g1'],
    ['shell', { agentSessionId: null }, 'exec /bin/sh -i'],
  ] as const)('%s %j', (agent, resume, command) => {
    expect(sessionLaunch({ ...base, agent, resume }).command).toBe(command);
  });
  it('codex: resume <id> first, then notify and no hook (Codex 0.171 runs no untrusted one)', () => {
    const launch = sessionLaunch({ ...base, agent: 'codex', resume: { agentSessionId: 'x-1' } });
    expect(launch.command).toMatch(
      /^exec codex resume x-1 -c 'notify=\["node","\/mam.js","hook","--from","codex-notify","--session","s1","--generation","3","--payload"\]'$/,
    );
    expect(sessionLaunch({ ...base, agent: 'codex', resume: { agentSessionId: null } }).command).toMatch(/^exec codex resume --last -c /);
    expect(launch.startDelayMs).toBe(CODEX_START_DELAY_MS);
  });
  it.each([
    ['claude', null],
    ['gemini', 0],
    ['shell', 0],
  ] as const)('%s: ready by its hook (null) or after %j ms', (agent, delay) => {
    expect(sessionLaunch({ ...base, agent }).startDelayMs).toBe(delay);
  });
  it("Claude's hooks name the session and its generation, never a job", () => {
    const settings = JSON.parse(claudeSessionSettings(['node', '/mam.js'], 's1', 3));
    expect(Object.keys(settings.hooks)).toEqual(['SessionStart', 'UserPromptSubmit', 'Notification', 'Stop', 'StopFailure']);
    expect(settings.hooks.Stop[0].hooks[0].command).toBe('node /mam.js hook --from claude --session s1 --generation 3');
  });
  it('a shell job script: the brief quoted, the job fenced, the session told at the end', () => {
    const script = shellJobScript(
      ['mam'],
      { name: 's1', generation: 3 },
      { jobId: 'abcd1234', attemptId: 1, dispatchToken: 'a'.repeat(32), brief: `echo "it's" $HOME` },
      { JOB_ID: 'abcd1234' },
    );
    expect(script).toContain(`sh -c 'echo "it'\\''s" $HOME'`);
    expect(script).toContain('export JOB_ID=abcd1234');
    expect(script).toMatch(/mam hook --from wrapper --session s1 --generation 3 --job abcd1234 .* --on exit --exit-code "\$rc"$/m);
  });
});
