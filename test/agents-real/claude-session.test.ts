import { expect, it } from 'vitest';
import { type RunResult, runBinAsync } from '../helpers/cli.ts';
import { printedEvents, registeredJob } from '../panes/session-fixtures.ts';
import { describeWithTmux } from '../panes/tmux-fixtures.ts';
import { realCliWorld } from './real-cli-world.ts';
import { describeWithCli } from './real-clis.ts';

/**
 * A named session (issue 25) with the real interactive Claude Code in a tmux pane of the test's own,
 * against the scripted Messages API: each job is typed into the one running Claude, its turn ends
 * with the Stop hook, and `mam session resume` goes on with the same conversation through Claude's
 * own `--resume <id>`, the id taken from its SessionStart hook. The stand-in suite
 * (test/panes/agent-sessions.test.ts) holds the rules; this holds them to the real CLI.
 */
describeWithTmux('a named session with the real interactive Claude Code', () => {
  describeWithCli('claude', 'a named session with the real interactive Claude Code', () => {
    const world = realCliWorld();

    /** The user messages of a request to the model, in order: the conversation Claude sent. */
    const userTexts = (body: unknown): string =>
      JSON.stringify((body as { messages: Array<{ role: string; content: unknown }> }).messages.filter((m) => m.role === 'user'));

    it('takes three jobs in one conversation, is stopped, and resumed with that conversation for the next', { timeout: 180_000 }, async () => {
      const env = await world.setup('claude', [], { tmux: true, claudeSeeded: true });
      const { ws, model } = world;
      const mam = (args: string[]): Promise<RunResult> => runBinAsync('mam', args, ws, { env, timeoutMs: 90_000 });

      const created = await mam(['session', 'create', '--name', 'rc', '--agent', 'claude', '--workdir', ws.root]);
      expect(created.code, created.stderr).toBe(0);
      const session = JSON.parse(created.stdout) as { agent_session_id: string };
      expect(session).toMatchObject({ state: 'running', agent: 'claude', idle: true });
      expect(session.agent_session_id).toMatch(/^[0-9a-f-]{36}$/);

      const jobs: string[] = [];
      for (const n of [1, 2, 3]) {
        const r = await mam(['delegate', '--json', '--session', 'rc', '--brief', `Job number ${n}: say hello.`]);
        expect(r.code, `job ${n}: ${r.stderr}`).toBe(0);
        expect(printedEvents(r.stdout)).toEqual(['started', 'completed']);
        jobs.push(registeredJob(r.stderr));
      }
      // One conversation: the third job's request carries the first two.
      const third = userTexts(model.requests.at(-1)!.body);
      for (const n of [1, 2, 3]) expect(third).toContain(`Job number ${n}: say hello.`);

      const stopped = await mam(['session', 'stop', 'rc']);
      expect(stopped.code, stopped.stderr).toBe(0);
      expect(JSON.parse(stopped.stdout)).toMatchObject({ state: 'stopped', agent_session_id: session.agent_session_id });

      const resumed = await mam(['session', 'resume', 'rc']);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ state: 'running', generation: 2 });
      const fourth = await mam(['delegate', '--json', '--session', 'rc', '--brief', 'Job number 4: say hello.']);
      expect(fourth.code, fourth.stderr).toBe(0);
      expect(printedEvents(fourth.stdout)).toEqual(['started', 'completed']);
      // A new Claude process, the conversation it resumed: job 1 is still in what it sends.
      const after = userTexts(model.requests.at(-1)!.body);
      expect(after).toContain('Job number 1: say hello.');
      expect(after).toContain('Job number 4: say hello.');

      const list = await mam(['session', 'list', '--json']);
      expect(JSON.parse(list.stdout.trim())).toMatchObject({ name: 'rc', state: 'running', jobs_done: 4, current_job: null });
      expect((await mam(['session', 'stop', 'rc', '--purge-conversation'])).code).toBe(0);
    });
  });
});
