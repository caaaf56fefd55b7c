import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { type Workspace, makeWorkspace, runBinAsync } from '../helpers/cli.ts';
import { describeWithTmux, isolatedTmux } from '../panes/tmux-fixtures.ts';
import { startAnthropicServer } from './anthropic-server.ts';
import { delegate, describeRun, names } from './delegate-run.ts';
import type { ModelServer } from './model-server.ts';
import { startGeminiServer } from './gemini-server.ts';
import { startOpenAiServer } from './openai-server.ts';
import { type RealCli, agentBinDir, cliProgram, offlineEnv } from './real-clis.ts';

/**
 * `mam delegate --pane tmux --agent claude|codex|gemini`: the interactive CLIs in a tmux pane of the
 * test's own, against the scripted model, the prompt handed over as their first argument. Claude's
 * first-run screens would wait for a person: with its state pre-seeded the job runs through; without,
 * MAM refuses at once, before registering anything.
 */
describeWithTmux('the real interactive CLIs in a tmux pane', () => {
  let broker: TestBroker;
  let ws: Workspace;
  let model: ModelServer | undefined;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  afterEach(async () => {
    await model?.close();
    model = undefined;
    ws?.cleanup();
  });

  let tmux: ReturnType<typeof isolatedTmux>;
  async function setup(cli: RealCli = 'claude'): Promise<NodeJS.ProcessEnv> {
    tmux = isolatedTmux();
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    const start = { claude: startAnthropicServer, codex: startOpenAiServer, gemini: startGeminiServer }[cli];
    model = await start([{ text: 'Nothing to change.' }]);
    const env: NodeJS.ProcessEnv = {
      ...offlineEnv(cli, ws.root, model.url),
      PATH: `${agentBinDir(ws.root)}${path.delimiter}${process.env.PATH}`,
      TMUX_TMPDIR: tmux.dir,
    };
    if (cli === 'codex') {
      // Codex runs only in a git repository, and its TUI asks first whether to trust the folder
      // (a person who ran Codex there once answered it: this is what it saved).
      rmSync(path.join(ws.root, '.git'), { recursive: true });
      execFileSync('git', ['init', '-q', ws.root]);
      appendFileSync(path.join(env.CODEX_HOME!, 'config.toml'), `[projects.${JSON.stringify(ws.root)}]\ntrust_level = "trusted"\n`);
    }
    return env;
  }
  /** The whole prompt reached the model (handed over as an argument, not typed). */
  const promptArrived = () => {
    const sent = JSON.stringify(model!.requests.map((r) => r.body));
    expect(sent).toContain('Before you start: report your progress with MAM');
    expect(sent).toContain('Say hello.');
  };

  it.skipIf(cliProgram('codex') === undefined)(
    'codex: started (the wrapper), the prompt as its argument, completed at the end of its turn (notify), the session closed',
    async () => {
      const env = await setup('codex');
      const run = await delegate(ws, ['--pane', 'tmux', '--agent', 'codex', '--brief', 'Say hello.', '--timeout', '60'], env);
      process.stderr.write(`${describeRun('codex in tmux', run)}\n`);
      expect(run.code, run.stderr).toBe(0);
      expect(names(run)).toEqual(['started', 'completed']);
      expect(run.events[1]!.detail).toBe('Codex finished its turn');
      promptArrived();
      expect(tmux.tmux('has-session', '-t', `=mam-${run.jobId}`).code).not.toBe(0);
    },
  );

  it.skipIf(cliProgram('gemini') === undefined)(
    'gemini: started (the wrapper), the prompt as `-i`; it stays interactive with no hook of MAM’s, so only the wall clock ends an unattended job',
    async () => {
      const env = await setup('gemini');
      const run = await delegate(ws, ['--pane', 'tmux', '--agent', 'gemini', '--brief', 'Say hello.', '--heartbeat', '1', '--timeout', '8'], env);
      process.stderr.write(`${describeRun('gemini in tmux', run)}\n`);
      expect(run.code, run.stderr).toBe(2);
      expect(names(run)).toEqual(['started']);
      promptArrived();
    },
  );

  it.skipIf(cliProgram('claude') === undefined)(
    'with its first-run state pre-seeded: started (SessionStart), the prompt as its first argument, completed (Stop), the session closed',
    async () => {
      const env = await setup();
      const key = env.ANTHROPIC_API_KEY!;
      mkdirSync(env.CLAUDE_CONFIG_DIR!, { recursive: true });
      const state = {
        hasCompletedOnboarding: true,
        projects: { [ws.root]: { hasTrustDialogAccepted: true } },
        customApiKeyResponses: { approved: [key.slice(-20)], rejected: [] },
      };
      writeFileSync(path.join(env.CLAUDE_CONFIG_DIR!, '.claude.json'), JSON.stringify(state));
      const run = await delegate(ws, ['--pane', 'tmux', '--agent', 'claude', '--brief', 'Say hello.', '--timeout', '60'], env);
      process.stderr.write(`${describeRun('claude in tmux', run)}\n`);
      expect(run.code, run.stderr).toBe(0);
      expect(names(run)).toEqual(['started', 'completed']);
      // The whole prompt reached the model through the terminal.
      const sent = JSON.stringify(model!.requests.at(-1)!.body);
      expect(sent).toContain('Before you start: report your progress with MAM');
      expect(sent).toContain('Say hello.');
      expect(tmux.tmux('has-session', '-t', `=mam-${run.jobId}`).code).not.toBe(0);
    },
  );

  it('claude without it: one line naming the screens and what to do, exit 1, nothing registered', async () => {
    const env = await setup();
    const r = await runBinAsync('mam', ['delegate', '--pane', 'tmux', '--agent', 'claude', '--brief', 'x'], ws, { env });
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `ERROR: --pane tmux --agent claude: Claude Code would stop at the first-run onboarding, the question whether to trust ${ws.root}, the question whether to use ANTHROPIC_API_KEY (${env.CLAUDE_CONFIG_DIR}/.claude.json) and the job could not start; run \`claude\` once in ${ws.root}, answer them, and try again`,
    );
    expect((await runBinAsync('mam', ['jobs', '--json'], ws)).stdout.trim()).toBe('[]');
  });
});
