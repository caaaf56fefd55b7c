import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { type Workspace, makeWorkspace } from '../helpers/cli.ts';
import { type IsolatedTmux, isolatedTmux } from '../panes/tmux-fixtures.ts';
import { startAnthropicServer } from './anthropic-server.ts';
import { startGeminiServer } from './gemini-server.ts';
import type { ModelServer } from './model-server.ts';
import { startOpenAiServer } from './openai-server.ts';
import { type RealCli, agentBinDir, offlineEnv } from './real-clis.ts';
import type { Scenario } from './scenario.ts';

const MODEL_SERVERS: Record<RealCli, (scenario: Scenario) => Promise<ModelServer>> = {
  claude: startAnthropicServer,
  codex: startOpenAiServer,
  gemini: startGeminiServer,
};

export interface WorldOptions {
  /** The workspace a git repository: `codex exec` runs only in one. */
  gitRepository?: boolean;
  /** The workspace trusted in Codex's config, as a person who ran Codex there once left it (its TUI asks first otherwise). */
  codexTrusted?: boolean;
  /** Claude Code's first-run answers (onboarding, folder trust, the API key) as a person who ran it there once left them. */
  claudeSeeded?: boolean;
  /** A tmux server of the test's own (TMUX_TMPDIR), for the interactive CLIs. */
  tmux?: boolean;
}

export interface RealCliWorld {
  /** This test's workspace, model and tmux server (after `setup`). */
  readonly ws: Workspace;
  readonly model: ModelServer;
  readonly tmux: IsolatedTmux;
  /**
   * A workspace on the suite's embedded broker, the model playing `scenario` for `cli`, and the
   * environment that runs the real CLI against it, offline (its node_modules bin first on PATH).
   */
  setup(cli: RealCli, scenario: Scenario, options?: WorldOptions): Promise<NodeJS.ProcessEnv>;
}

/**
 * What every real-CLI suite stands on: one embedded broker for the suite, and per test a workspace
 * and a scripted model server, both gone when the test ends. Call inside the suite's `describe`.
 */
export function realCliWorld(): RealCliWorld {
  let broker: TestBroker | undefined;
  let ws: Workspace | undefined;
  let model: ModelServer | undefined;
  let tmux: IsolatedTmux | undefined;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  afterEach(async () => {
    await model?.close();
    ws?.cleanup();
    model = undefined;
    ws = undefined;
    tmux = undefined;
  });
  const need = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`realCliWorld: no ${what} before setup()`);
    return value;
  };
  return {
    get ws() {
      return need(ws, 'workspace');
    },
    get model() {
      return need(model, 'model server');
    },
    get tmux() {
      return need(tmux, 'tmux server (setup with { tmux: true })');
    },
    async setup(cli, scenario, options = {}) {
      const here = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(need(broker, 'broker').port) });
      ws = here;
      model = await MODEL_SERVERS[cli](scenario);
      const env: NodeJS.ProcessEnv = { ...offlineEnv(cli, here.root, model.url), PATH: `${agentBinDir(here.root)}${path.delimiter}${process.env.PATH}` };
      if (options.tmux) {
        tmux = isolatedTmux();
        env.TMUX_TMPDIR = tmux.dir;
      }
      if (options.gitRepository) {
        rmSync(path.join(here.root, '.git'), { recursive: true });
        execFileSync('git', ['init', '-q', here.root]);
      }
      if (options.codexTrusted) {
        appendFileSync(path.join(env.CODEX_HOME!, 'config.toml'), `[projects.${JSON.stringify(here.root)}]\ntrust_level = "trusted"\n`);
      }
      if (options.claudeSeeded) {
        mkdirSync(env.CLAUDE_CONFIG_DIR!, { recursive: true });
        const state = {
          hasCompletedOnboarding: true,
          projects: { [here.root]: { hasTrustDialogAccepted: true } },
          customApiKeyResponses: { approved: [env.ANTHROPIC_API_KEY!.slice(-20)], rejected: [] },
        };
        writeFileSync(path.join(env.CLAUDE_CONFIG_DIR!, '.claude.json'), JSON.stringify(state));
      }
      return env;
    },
  };
}
