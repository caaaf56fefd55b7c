import { expect, it } from 'vitest';
import { runBinAsync } from '../helpers/cli.ts';
import { describeWithTmux } from '../panes/tmux-fixtures.ts';
import { delegate, describeRun, names } from './delegate-run.ts';
import { type RealCli, cliProgram } from './real-clis.ts';
import { realCliWorld } from './real-cli-world.ts';

/**
 * `mam delegate --pane tmux --agent claude|codex|gemini`: the interactive CLIs in a tmux pane of the
 * test's own, against the scripted model, the prompt handed over as their first argument. Claude's
 * first-run screens would wait for a person: with its state pre-seeded the job runs through; without,
 * MAM refuses at once, before registering anything.
 */
describeWithTmux('the real interactive CLIs in a tmux pane', () => {
  const world = realCliWorld();

  // Codex runs only in a git repository, and its TUI asks first whether to trust the folder.
  const setup = (cli: RealCli = 'claude', options: { claudeSeeded?: boolean } = {}) =>
    world.setup(cli, [{ text: 'Nothing to change.' }], { tmux: true, gitRepository: cli === 'codex', codexTrusted: cli === 'codex', ...options });
  /** The whole prompt reached the model (handed over as an argument, not typed). */
  const promptArrived = () => {
    const sent = JSON.stringify(world.model.requests.map((r) => r.body));
    expect(sent).toContain('Before you start: report your progress with MAM');
    expect(sent).toContain('Say hello.');
  };

  it.skipIf(cliProgram('codex') === undefined)(
    'codex: started (the wrapper), the prompt as its argument, completed at the end of its turn (notify), the session closed',
    async () => {
      const env = await setup('codex');
      const run = await delegate(world.ws, ['--pane', 'tmux', '--agent', 'codex', '--brief', 'Say hello.', '--timeout', '60'], env);
      process.stderr.write(`${describeRun('codex in tmux', run)}\n`);
      expect(run.code, run.stderr).toBe(0);
      expect(names(run)).toEqual(['started', 'completed']);
      expect(run.events[1]!.detail).toBe('Codex finished its turn');
      promptArrived();
      expect(world.tmux.tmux('has-session', '-t', `=mam-${run.jobId}`).code).not.toBe(0);
    },
  );

  it.skipIf(cliProgram('gemini') === undefined)(
    'gemini: started (the wrapper), the prompt as `-i`; it stays interactive with no hook of MAM’s, so only the wall clock ends an unattended job',
    async () => {
      const env = await setup('gemini');
      const run = await delegate(world.ws, ['--pane', 'tmux', '--agent', 'gemini', '--brief', 'Say hello.', '--heartbeat', '1', '--timeout', '8'], env);
      process.stderr.write(`${describeRun('gemini in tmux', run)}\n`);
      expect(run.code, run.stderr).toBe(2);
      expect(names(run)).toEqual(['started']);
      promptArrived();
    },
  );

  it.skipIf(cliProgram('claude') === undefined)(
    'with its first-run state pre-seeded: started (SessionStart), the prompt as its first argument, completed (Stop), the session closed',
    async () => {
      const env = await setup('claude', { claudeSeeded: true });
      const run = await delegate(world.ws, ['--pane', 'tmux', '--agent', 'claude', '--brief', 'Say hello.', '--timeout', '60'], env);
      process.stderr.write(`${describeRun('claude in tmux', run)}\n`);
      expect(run.code, run.stderr).toBe(0);
      expect(names(run)).toEqual(['started', 'completed']);
      // The whole prompt reached the model through the terminal.
      const sent = JSON.stringify(world.model.requests.at(-1)!.body);
      expect(sent).toContain('Before you start: report your progress with MAM');
      expect(sent).toContain('Say hello.');
      expect(world.tmux.tmux('has-session', '-t', `=mam-${run.jobId}`).code).not.toBe(0);
    },
  );

  it('claude without it: one line naming the screens and what to do, exit 1, nothing registered', async () => {
    const env = await setup();
    const r = await runBinAsync('mam', ['delegate', '--pane', 'tmux', '--agent', 'claude', '--brief', 'x'], world.ws, { env });
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `ERROR: --pane tmux --agent claude: Claude Code would stop at the first-run onboarding, the question whether to trust ${world.ws.root}, the question whether to use ANTHROPIC_API_KEY (${env.CLAUDE_CONFIG_DIR}/.claude.json) and the job could not start; run \`claude\` once in ${world.ws.root}, answer them, and try again`,
    );
    expect((await runBinAsync('mam', ['jobs', '--json'], world.ws)).stdout.trim()).toBe('[]');
  });
});
