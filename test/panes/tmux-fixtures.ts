import { spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it, onTestFinished } from 'vitest';
import { shellQuote } from '../../src/core/bin-path.ts';
import type { TmuxServer } from '../../src/core/panes/tmux-client.ts';
import { makeTempDir } from '../helpers/temp-dir.ts';

export const STAND_IN_AGENT = fileURLToPath(new URL('./stand-in-agent.mjs', import.meta.url));
/** The agent's command line, as a `--exec` would give it. */
export const STAND_IN_COMMAND = `exec ${shellQuote(process.execPath)} ${shellQuote(STAND_IN_AGENT)}`;

/** tmux on PATH, unless MAM_TEST_HIDE_SERVERS names it (to check the skip and fail paths). */
export function tmuxMode(env: NodeJS.ProcessEnv = process.env): 'run' | 'skip' | 'fail' {
  const hidden = (env.MAM_TEST_HIDE_SERVERS ?? '').split(',').some((s) => s.trim() === 'tmux');
  const found = (env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, 'tmux'), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (found && !hidden) return 'run';
  return env.CI === 'true' ? 'fail' : 'skip';
}

/** A `describe` for the tmux suites: runs, skips with a `SKIPPED:` line, or fails under CI=true (as brokers.ts's requireServer). */
export function describeWithTmux(title: string, fn: () => void): void {
  const mode = tmuxMode();
  if (mode === 'run') {
    describe(title, fn);
    return;
  }
  if (mode === 'fail') {
    describe(title, () => {
      it('requires tmux', () => {
        throw new Error('tmux not installed, and CI=true forbids skipping the tmux pane suites');
      });
    });
    return;
  }
  try {
    // One line per run, not per file (the workers' parent is the vitest process).
    closeSync(openSync(join(tmpdir(), `mam-test-skipped-${process.ppid}-tmux`), 'wx'));
    process.stderr.write('SKIPPED: tmux pane suites — tmux not installed (apt install tmux)\n');
  } catch {
    // announced already
  }
  describe.skip(title, fn);
}

export interface IsolatedTmux {
  /** TMUX_TMPDIR of this test's own tmux server. */
  dir: string;
  /** process.env pointed at that server: its TMUX_TMPDIR, its own HOME, and no $TMUX of a tmux the tests may run in. */
  env: NodeJS.ProcessEnv;
  server: TmuxServer;
  tmux(...args: string[]): { code: number | null; stdout: string; stderr: string };
}

/** Inside a test: a tmux server of its own, killed (with every pane in it) when the test ends. */
export function isolatedTmux(): IsolatedTmux {
  const temp = makeTempDir('mam-tmux-');
  // HOME too: no ~/.tmux.conf of this machine shapes the test's server.
  const env: NodeJS.ProcessEnv = { ...process.env, TMUX_TMPDIR: temp.path, HOME: temp.path, XDG_CONFIG_HOME: temp.path };
  delete env.TMUX;
  delete env.TMUX_PANE;
  const tmux = (...args: string[]) => {
    const r = spawnSync('tmux', args, { env, encoding: 'utf8' });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  onTestFinished(() => {
    tmux('kill-server');
    temp.cleanup();
  });
  return { dir: temp.path, env, server: { env }, tmux };
}
