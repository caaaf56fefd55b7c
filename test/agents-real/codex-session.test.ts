import { expect, it } from 'vitest';
import { type RunResult, runBinAsync } from '../helpers/cli.ts';
import { printedEvents, registeredJob } from '../panes/session-fixtures.ts';
import { describeWithTmux } from '../panes/tmux-fixtures.ts';
import { openaiPrompt } from './openai-server.ts';
import { describeWithCli } from './real-clis.ts';
import { realCliWorld } from './real-cli-world.ts';

/**
 * A named session (issue 25) with the real interactive Codex (its TUI) in a tmux pane of the test's
 * own, against the scripted Responses API. Codex runs no `-c` hook it was not trusted with, so the
 * session has only `notify`: it is idle after its start delay, each job's `started` is published as
 * it is typed in, its turn ends with notify, whose `thread-id` is the conversation that
 * `mam session resume` hands to `codex resume <id>`. The stand-in suite
 * (test/panes/agent-sessions.test.ts) holds the rules; this holds them to the real CLI.
 */
describeWithTmux('a named session with the real interactive Codex', () => {
  describeWithCli('codex', 'a named session with the real interactive Codex', () => {
    const world = realCliWorld();

    /** The user's words of a main-loop request (not the title thread's), in order: the conversation Codex sent. */
    const conversation = (): string[] =>
      world.model.requests
        .map((r) => openaiPrompt(r.body as Parameters<typeof openaiPrompt>[0]))
        .filter((p) => !p.includes('Generate a concise, single-line task title'));

    it('takes three jobs in one conversation, is stopped, and resumed with that conversation for the next', { timeout: 180_000 }, async () => {
      // What a person who ran Codex here once answered: its "Trust this folder?" screen (§7.4).
      const env = await world.setup('codex', [], { tmux: true, gitRepository: true, codexTrusted: true });
      const { ws } = world;
      const mam = (args: string[]): Promise<RunResult> => runBinAsync('mam', args, ws, { env, timeoutMs: 90_000 });

      const created = await mam(['session', 'create', '--name', 'rc', '--agent', 'codex', '--workdir', ws.root]);
      expect(created.code, created.stderr).toBe(0);
      // Idle after its start delay; no hook gave an id yet.
      expect(JSON.parse(created.stdout)).toMatchObject({ state: 'running', agent: 'codex', idle: true, agent_session_id: null });

      const jobs: string[] = [];
      for (const n of [1, 2, 3]) {
        const r = await mam(['delegate', '--json', '--session', 'rc', '--brief', `Job number ${n}: say hello.`]);
        expect(r.code, `job ${n}: ${r.stderr}`).toBe(0);
        expect(printedEvents(r.stdout)).toEqual(['started', 'completed']);
        jobs.push(registeredJob(r.stderr));
      }
      // One conversation: the third job's request carries the first two.
      const third = conversation().at(-1)!;
      for (const n of [1, 2, 3]) expect(third).toContain(`Job number ${n}: say hello.`);
      // The conversation's id, from the first job's notify (`thread-id`), not from its title thread's.
      const [listed] = (await mam(['session', 'list', '--json'])).stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(listed).toMatchObject({ jobs_done: 3, idle: true, current_job: null });
      const id = listed.agent_session_id as string;
      expect(id).toMatch(/^[0-9a-f-]{36}$/);

      const stopped = await mam(['session', 'stop', 'rc']);
      expect(stopped.code, stopped.stderr).toBe(0);
      expect(JSON.parse(stopped.stdout)).toMatchObject({ state: 'stopped', agent_session_id: id });

      const resumed = await mam(['session', 'resume', 'rc']);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ state: 'running', generation: 2, idle: true });
      const fourth = await mam(['delegate', '--json', '--session', 'rc', '--brief', 'Job number 4: say hello.']);
      expect(fourth.code, fourth.stderr).toBe(0);
      expect(printedEvents(fourth.stdout)).toEqual(['started', 'completed']);
      // A new Codex process (`codex resume <id>`), the conversation it resumed: job 1 is still in what it sends.
      const after = conversation().at(-1)!;
      expect(after).toContain('Job number 1: say hello.');
      expect(after).toContain('Job number 4: say hello.');

      const list = await mam(['session', 'list', '--json']);
      expect(JSON.parse(list.stdout.trim())).toMatchObject({ name: 'rc', state: 'running', jobs_done: 4, current_job: null, agent_session_id: id });
      expect((await mam(['session', 'stop', 'rc', '--purge-conversation'])).code).toBe(0);
    });
  });
});
