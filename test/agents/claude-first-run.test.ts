import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it, onTestFinished } from 'vitest';
import { claudeFirstRunScreens, claudeStateFile } from '../../src/core/agents/claude-first-run.ts';
import { makeTempDir } from '../helpers/temp-dir.ts';

/** What an interactive Claude reads to skip its first-run screens (as 2.1.332 does; test/agents-real/panes.test.ts runs it). */
function state(value: unknown): { env: NodeJS.ProcessEnv; dir: string } {
  const temp = makeTempDir('mam-claude-state-');
  onTestFinished(() => temp.cleanup());
  const env = {
    HOME: path.join(temp.path, 'home'),
    CLAUDE_CONFIG_DIR: path.join(temp.path, 'config'),
    ANTHROPIC_API_KEY: 'sk-ant-api03-0123456789abcdefghijKLMN',
  };
  mkdirSync(env.CLAUDE_CONFIG_DIR, { recursive: true });
  if (value !== undefined) writeFileSync(claudeStateFile(env), JSON.stringify(value));
  return { env, dir: temp.path };
}

it('never run: onboarding, trust and the API key question would all stop it', () => {
  const { env } = state(undefined);
  expect(claudeFirstRunScreens(env, '/work/repo')).toEqual([
    'the first-run onboarding',
    'the question whether to trust /work/repo',
    'the question whether to use ANTHROPIC_API_KEY',
  ]);
});

it('set up: a trusted parent folder counts, the key is approved by its last 20 characters', () => {
  const { env } = state({
    hasCompletedOnboarding: true,
    projects: { '/work': { hasTrustDialogAccepted: true } },
    customApiKeyResponses: { approved: ['456789abcdefghijKLMN'] },
  });
  expect(claudeFirstRunScreens(env, '/work/repo')).toEqual([]);
  expect(claudeFirstRunScreens(env, '/elsewhere')).toEqual(['the question whether to trust /elsewhere']);
  expect(claudeFirstRunScreens({ ...env, ANTHROPIC_API_KEY: 'sk-another-key-0000000000000000' }, '/work/repo')).toEqual([
    'the question whether to use ANTHROPIC_API_KEY',
  ]);
  // Logged in without an API key: no key question.
  expect(claudeFirstRunScreens({ ...env, ANTHROPIC_API_KEY: undefined }, '/work/repo')).toEqual([]);
});

it('the state file: CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json; unreadable counts as never run', () => {
  expect(claudeStateFile({ HOME: '/h' })).toBe('/h/.claude.json');
  expect(claudeStateFile({ HOME: '/h', CLAUDE_CONFIG_DIR: '/c' })).toBe('/c/.claude.json');
  const { env } = state(undefined);
  writeFileSync(claudeStateFile(env), '{ not json');
  expect(claudeFirstRunScreens(env, '/w')).toHaveLength(3);
});
