import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { type Workspace, makeWorkspace, runBinAsync } from '../helpers/cli.ts';
import { describeWithTmux, isolatedTmux } from '../panes/tmux-fixtures.ts';
import { startAnthropicServer } from './anthropic-server.ts';
import { delegate, describeRun, names } from './delegate-run.ts';
import type { ModelServer } from './model-server.ts';
import { agentBinDir, cliProgram, offlineEnv } from './real-clis.ts';

/**
 * `mam delegate --pane tmux --agent claude`: the interactive Claude Code in a tmux pane of the test's
 * own, against the scripted model. Its first-run screens would wait for a person: with its state
 * pre-seeded the job runs through; without, MAM refuses at once, before registering anything.
 */
describeWithTmux('the real interactive Claude Code in a tmux pane', () => {
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
  async function setup(): Promise<NodeJS.ProcessEnv> {
    tmux = isolatedTmux();
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    model = await startAnthropicServer([{ text: 'Nothing to change.' }]);
    return { ...offlineEnv('claude', ws.root, model.url), PATH: `${agentBinDir(ws.root)}${path.delimiter}${process.env.PATH}`, TMUX_TMPDIR: tmux.dir };
  }

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

  it('without it: one line naming the screens and what to do, exit 1, nothing registered', async () => {
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
