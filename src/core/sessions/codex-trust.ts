import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'smol-toml';

/**
 * Whether Codex will start in a folder without a screen in the way. Its TUI (0.171, seen in tmux)
 * opens at once where its config.toml trusts the folder or a folder above it (`[projects."<dir>"]
 * trust_level = "trusted"`; a trusted parent or git repository root counts), and otherwise asks
 * "Trust this folder?" (none recorded) or offers "Open restricted" (`"untrusted"`). MAM must not
 * start a session there: the first job's Enter would answer that screen ("Trust and continue" is
 * the default: the folder trusted on the user's behalf) and its prompt would be lost
 * (docs/agent-cli-facts.md §7.4). Read from the file Codex reads, never from its screen.
 */
export interface CodexTrust {
  trusted: boolean;
  /** The config file that was read (or would be). */
  configFile: string;
  /** Why it could not be read, when it could not. */
  problem?: string | undefined;
}

/** `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`, in the environment the agent gets. */
export function codexConfigFile(env: NodeJS.ProcessEnv): string {
  const home = env.CODEX_HOME ?? path.join(env.HOME ?? '', '.codex');
  return path.join(home, 'config.toml');
}

export function codexTrust(workdir: string, env: NodeJS.ProcessEnv): CodexTrust {
  const configFile = codexConfigFile(env);
  let projects: unknown;
  try {
    projects = (parse(readFileSync(configFile, 'utf8')) as { projects?: unknown }).projects;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { trusted: false, configFile, problem: code === 'ENOENT' ? 'no such file' : (err as Error).message.split('\n')[0] };
  }
  if (typeof projects !== 'object' || projects === null) return { trusted: false, configFile };
  const table = projects as Record<string, unknown>;
  // The folder as given and as resolved through links (which one Codex keys by is not documented).
  const real = (() => {
    try {
      return realpathSync(workdir);
    } catch {
      return path.resolve(workdir);
    }
  })();
  return { trusted: trustedAbove(table, path.resolve(workdir)) || trustedAbove(table, real), configFile };
}

/** The nearest folder with a decision decides. */
function trustedAbove(table: Record<string, unknown>, start: string): boolean {
  for (let dir = start; ; dir = path.dirname(dir)) {
    const level = (table[dir] as { trust_level?: unknown } | undefined)?.trust_level;
    if (typeof level === 'string') return level === 'trusted';
    if (path.dirname(dir) === dir) return false;
  }
}
