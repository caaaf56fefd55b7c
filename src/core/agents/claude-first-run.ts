import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MamError } from '../errors.ts';

/**
 * The screens an interactive Claude Code shows before it takes a prompt, and what it reads to skip
 * them (seen with 2.1.332 in a tmux pane, docs/agent-cli-facts.md §7): the onboarding
 * (`hasCompletedOnboarding`), the trust of the folder or one of its parents
 * (`projects[<dir>].hasTrustDialogAccepted`), and, when ANTHROPIC_API_KEY is set, whether to use that
 * key (`customApiKeyResponses.approved` holds its last 20 characters). They live in `.claude.json` in
 * CLAUDE_CONFIG_DIR, else in the home folder. `-p` shows none of them.
 *
 * A job typed into a pane that stops at one of them would wait for nobody: MAM does not write
 * another tool's state, so it checks before anything is registered and says what to do.
 */
export class ClaudeNotSetUp extends MamError {}

interface ClaudeState {
  hasCompletedOnboarding?: unknown;
  projects?: Record<string, { hasTrustDialogAccepted?: unknown } | undefined>;
  customApiKeyResponses?: { approved?: unknown };
}

export function claudeStateFile(env: NodeJS.ProcessEnv): string {
  return env.CLAUDE_CONFIG_DIR ? path.join(env.CLAUDE_CONFIG_DIR, '.claude.json') : path.join(env.HOME ?? '', '.claude.json');
}

/** The first-run screens that would stop an interactive Claude started in `cwd`; empty when none would. */
export function claudeFirstRunScreens(env: NodeJS.ProcessEnv, cwd: string): string[] {
  let state: ClaudeState = {};
  try {
    state = JSON.parse(readFileSync(claudeStateFile(env), 'utf8')) as ClaudeState;
  } catch {
    // No state yet (never run), or unreadable: every screen is still to come.
  }
  const screens: string[] = [];
  if (state.hasCompletedOnboarding !== true) screens.push('the first-run onboarding');
  const trusted = ancestors(path.resolve(cwd)).some((dir) => state.projects?.[dir]?.hasTrustDialogAccepted === true);
  if (!trusted) screens.push(`the question whether to trust ${cwd}`);
  const key = env.ANTHROPIC_API_KEY;
  const approved = state.customApiKeyResponses?.approved;
  if (key && !(Array.isArray(approved) && approved.includes(key.slice(-20)))) screens.push('the question whether to use ANTHROPIC_API_KEY');
  return screens;
}

function ancestors(dir: string): string[] {
  const out = [dir];
  for (let d = dir; path.dirname(d) !== d; d = path.dirname(d)) out.push(path.dirname(d));
  return out;
}

/** Throws ClaudeNotSetUp naming the screens and the fix, when an interactive Claude would stop at one. */
export function assertClaudeReadyForPane(env: NodeJS.ProcessEnv, cwd: string): void {
  const screens = claudeFirstRunScreens(env, cwd);
  if (screens.length === 0) return;
  throw new ClaudeNotSetUp(
    `--pane tmux --agent claude: Claude Code would stop at ${screens.join(', ')} (${claudeStateFile(env)}) and the job could not start; run \`claude\` once in ${cwd}, answer them, and try again`,
  );
}
