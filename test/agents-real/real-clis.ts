import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, it } from 'vitest';

/**
 * The real agent CLIs, from this repo's node_modules (devDependencies), never from a global install:
 * where each one's program is, its version, and the environment that runs it offline against a
 * scripted model on loopback (docs/agent-cli-facts.md §7 has the evidence for each variable).
 */
export type RealCli = 'claude' | 'codex' | 'gemini';

const require = createRequire(import.meta.url);

function packageDir(name: string): string | undefined {
  try {
    return path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    return undefined;
  }
}

/**
 * The program to run. Claude Code's npm package puts its native binary in place with a postinstall
 * script (npm 11 skips unapproved ones), so the binary is taken from the per-platform optional
 * dependency it would copy, which npm installs without any script.
 */
export function cliProgram(cli: RealCli, env: NodeJS.ProcessEnv = process.env): string | undefined {
  // MAM_TEST_HIDE_SERVERS=claude,… hides a CLI, to check the skip and fail paths (as for tmux).
  if ((env.MAM_TEST_HIDE_SERVERS ?? '').split(',').some((s) => s.trim() === cli)) return undefined;
  const found = (p: string | undefined) => (p !== undefined && existsSync(p) ? p : undefined);
  switch (cli) {
    case 'claude': {
      const dir = packageDir(`@anthropic-ai/claude-code-${process.platform}-${process.arch}`);
      return found(dir && path.join(dir, 'claude'));
    }
    case 'codex': {
      const dir = packageDir('@openai/codex');
      return found(dir && path.join(dir, 'bin', 'codex.js'));
    }
    case 'gemini': {
      const dir = packageDir('@google/gemini-cli');
      return found(dir && path.join(dir, 'bundle', 'gemini.js'));
    }
  }
}

const versions = new Map<RealCli, string>();

/** `<cli> --version`, first line (`2.1.332 (Claude Code)`, `codex-cli 0.171.0`, `0.61.0`). */
export function cliVersion(cli: RealCli): string {
  const cached = versions.get(cli);
  if (cached !== undefined) return cached;
  const program = cliProgram(cli);
  if (program === undefined) return 'not installed';
  const r = spawnSync(program, ['--version'], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...quietEnv(cli) } });
  const version = (r.stdout || r.stderr).trim().split('\n')[0] ?? `exit ${r.status}`;
  versions.set(cli, version);
  return version;
}

/** Variables that turn off each CLI's update checks, telemetry and other calls to the closed network. */
function quietEnv(cli: RealCli): Record<string, string> {
  switch (cli) {
    case 'claude':
      return { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1' };
    case 'codex':
      return {}; // its update check and analytics are off in config.toml (offlineEnv)
    case 'gemini':
      // No re-launch of itself with a bigger heap (one process, so the heartbeat watches the right one).
      return { GEMINI_CLI_NO_RELAUNCH: 'true', GEMINI_TELEMETRY_ENABLED: 'false' };
  }
}

/**
 * A folder holding `claude`, `codex` and `gemini` links to the real programs, to put first on PATH:
 * MAM's presets call the CLIs by these names, and the heartbeat finds the agent by its name.
 */
export function agentBinDir(home: string): string {
  const dir = path.join(home, 'agent-bin');
  mkdirSync(dir, { recursive: true });
  for (const cli of ['claude', 'codex', 'gemini'] as const) {
    const program = cliProgram(cli);
    if (program !== undefined && !existsSync(path.join(dir, cli))) symlinkSync(program, path.join(dir, cli));
  }
  return dir;
}

/**
 * The environment that points `cli` at the scripted model `modelUrl`, with its state in `home`
 * (a test's own folder): no login, no first-run questions, nothing sent elsewhere.
 */
export function offlineEnv(cli: RealCli, home: string, modelUrl: string): Record<string, string> {
  const env: Record<string, string> = { HOME: home, ...quietEnv(cli) };
  switch (cli) {
    case 'claude':
      return { ...env, CLAUDE_CONFIG_DIR: path.join(home, '.claude'), ANTHROPIC_BASE_URL: modelUrl, ANTHROPIC_API_KEY: 'sk-ant-scripted-model' };
    case 'codex': {
      const codexHome = path.join(home, '.codex');
      mkdirSync(codexHome, { recursive: true });
      writeFileSync(
        path.join(codexHome, 'config.toml'),
        [
          'model = "scripted-model"',
          'model_provider = "scripted"',
          'check_for_update_on_startup = false',
          '[analytics]',
          'enabled = false',
          '[model_providers.scripted]',
          'name = "scripted"',
          `base_url = "${modelUrl}/v1"`,
          'env_key = "SCRIPTED_MODEL_API_KEY"',
          'wire_api = "responses"',
          // Codex's defaults retry a 503 for about 25 s (measured with 0.171.0): one retry keeps the suite quick.
          'request_max_retries = 1',
          'stream_max_retries = 1',
          '',
        ].join('\n'),
      );
      return { ...env, CODEX_HOME: codexHome, SCRIPTED_MODEL_API_KEY: 'sk-scripted-model' };
    }
    case 'gemini': {
      mkdirSync(path.join(home, '.gemini'), { recursive: true });
      // GOOGLE_GEMINI_BASE_URL alone makes Gemini pick the `gateway` auth, which its headless mode
      // refuses ("Invalid auth method selected"): the API-key auth is chosen in the settings.
      const settings = {
        security: { auth: { selectedType: 'gemini-api-key' } },
        // maxAttempts: Gemini retries a 503 ten times, 5 to 30 s apart (packages/core/src/utils/retry.ts
        // DEFAULT_RETRY_OPTIONS); two keep the suite quick.
        general: { disableAutoUpdate: true, disableUpdateNag: true, maxAttempts: 2 },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      };
      writeFileSync(path.join(home, '.gemini', 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
      return {
        ...env,
        GEMINI_API_KEY: 'scripted-model-key',
        GOOGLE_GEMINI_BASE_URL: modelUrl,
        // A fixed model: with the default `auto`, Gemini first asks a router model to rate the task.
        GEMINI_MODEL: 'gemini-2.5-flash',
        // Headless Gemini refuses an untrusted folder (exit 55); a MAM job's workspace is the user's.
        GEMINI_CLI_TRUST_WORKSPACE: 'true',
      };
    }
  }
}

const announced = new Set<string>();

/**
 * A `describe` that runs when the CLI's program is installed (node_modules), prints the version it
 * runs, and otherwise skips with a loud `SKIPPED:` line — or fails, under CI=true.
 */
export function describeWithCli(cli: RealCli, title: string, fn: () => void): void {
  const program = cliProgram(cli);
  if (program !== undefined) {
    const version = cliVersion(cli);
    if (!announced.has(cli)) {
      announced.add(cli);
      process.stderr.write(`real agent CLI: ${cli} ${version} (${program})\n`);
    }
    describe(`${title} [${cli} ${version}]`, fn);
    return;
  }
  if (process.env.CI === 'true') {
    describe(title, () => {
      it(`requires the ${cli} CLI`, () => {
        throw new Error(`${cli} is not installed in node_modules (npm ci installs it as a devDependency), and CI=true forbids skipping`);
      });
    });
    return;
  }
  process.stderr.write(`SKIPPED: ${title} — the ${cli} CLI is not in node_modules (run npm ci)\n`);
  describe.skip(title, fn);
}
