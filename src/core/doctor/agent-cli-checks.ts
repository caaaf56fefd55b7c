import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import type { AgentName } from '../agents/presets.ts';

/**
 * What `mam doctor` asks of each agent CLI a preset runs (src/core/agents/presets.ts): is it on PATH,
 * what version says it is, and does its `--help` still list every flag the preset passes. Versions
 * move fast; a renamed flag shows here before a job fails on it.
 */
export interface CliCheckSpec {
  /** The program the preset calls. */
  program: string;
  /** Arguments that print the help listing the preset's flags. */
  helpArgs: string[];
  /** The flags the headless preset passes, as `--help` spells them. */
  flags: string[];
}

export const CLI_CHECKS: Record<Exclude<AgentName, 'shell'>, CliCheckSpec> = {
  claude: { program: 'claude', helpArgs: ['--help'], flags: ['--print', '--settings', '--mcp-config', '--permission-prompt-tool'] },
  codex: { program: 'codex', helpArgs: ['exec', '--help'], flags: ['--config'] },
  // The preset passes no flags: the prompt is on stdin.
  gemini: { program: 'gemini', helpArgs: ['--help'], flags: [] },
  aider: { program: 'aider', helpArgs: ['--help'], flags: ['--no-check-update', '--no-show-release-notes', '--no-pretty', '--message-file'] },
};

export type CliReport =
  | { agent: string; found: false }
  | { agent: string; found: true; path: string; version: string | undefined; missingFlags: string[]; helpFailed?: string | undefined };

/** The first executable `name` on `PATH`, as `sh` would find it. */
export function onPath(name: string, envPath: string | undefined): string | undefined {
  for (const dir of (envPath ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Runs a CLI for its output; never more than `timeoutMs` (a CLI that waits on a terminal is killed). */
function output(file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; text: string; stdout: string }> {
  return new Promise((resolve) => {
    let text = '';
    let stdout = '';
    const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (text += d));
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, text: err.message, stdout });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, text, stdout });
    });
  });
}

/**
 * A flag is there when `--help` names it as a word: as an option (`--settings <file>`, `-c,
 * --config <key=value>`) or in another's description. Claude Code 2.1.332 lists no
 * `--permission-prompt-tool` line (a hidden option that works, test/agents-real/claude.test.ts) but
 * names it in `--permission-prompts`' text; a flag gone from both has most likely gone.
 */
export function listsFlag(help: string, flag: string): boolean {
  return new RegExp(`(^|[\\s,\\[("'\`])${flag.replace(/[-]/g, '\\-')}(?=$|[\\s,=<\\[\\])"'\`.;:])`, 'm').test(help);
}

export async function checkAgentCli(agent: keyof typeof CLI_CHECKS, env: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<CliReport> {
  const spec = CLI_CHECKS[agent];
  const found = onPath(spec.program, env.PATH);
  if (found === undefined) return { agent, found: false };
  const [version, help] = await Promise.all([output(found, ['--version'], env, timeoutMs), output(found, spec.helpArgs, env, timeoutMs)]);
  // stdout first: Codex warns on stderr before it prints its version.
  const firstLine = version.code === 0 ? (version.stdout.trim() || version.text.trim()).split('\n')[0] : undefined;
  if (help.code !== 0) {
    return {
      agent,
      found: true,
      path: found,
      version: firstLine,
      missingFlags: spec.flags,
      helpFailed: `\`${spec.program} ${spec.helpArgs.join(' ')}\` exited ${help.code ?? 'on a signal'}`,
    };
  }
  return { agent, found: true, path: found, version: firstLine, missingFlags: spec.flags.filter((f) => !listsFlag(help.text, f)) };
}
