import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { codexConfigFile, codexTrust } from '../../../src/core/sessions/codex-trust.ts';
import { tempDirForTest } from '../../helpers/temp-dir.ts';

/** A CODEX_HOME whose config.toml holds `projects` (folder → trust_level) under a root of the test's own. */
function world(projects: Record<string, string>, extra = ''): { root: string; env: NodeJS.ProcessEnv } {
  const root = tempDirForTest('mam-codex-trust-');
  const home = path.join(root, 'codex-home');
  mkdirSync(home);
  const tables = Object.entries(projects).map(([dir, level]) => `[projects.${JSON.stringify(path.join(root, dir))}]\ntrust_level = "${level}"\n`);
  writeFileSync(path.join(home, 'config.toml'), `model = "m"\n${extra}${tables.join('')}`);
  return { root, env: { CODEX_HOME: home } };
}

describe('codexTrust: whether Codex 0.171 opens in a folder without its folder screen (its config.toml)', () => {
  it('the folder, a parent (a git root) trusted: yes; the nearest decision wins', () => {
    const { root, env } = world({ repo: 'trusted', 'repo/vendor': 'untrusted' });
    expect(codexTrust(path.join(root, 'repo'), env).trusted).toBe(true);
    expect(codexTrust(path.join(root, 'repo', 'src', 'deep'), env).trusted).toBe(true);
    // "untrusted" opens an "Open restricted" screen: no better for a session.
    expect(codexTrust(path.join(root, 'repo', 'vendor'), env).trusted).toBe(false);
    expect(codexTrust(path.join(root, 'elsewhere'), env).trusted).toBe(false);
  });

  it('through a link: the folder as given or as resolved', () => {
    const { root, env } = world({ real: 'trusted' });
    mkdirSync(path.join(root, 'real'));
    symlinkSync(path.join(root, 'real'), path.join(root, 'link'));
    expect(codexTrust(path.join(root, 'link'), env).trusted).toBe(true);
  });

  it('no config file, or one Codex could not read either: not trusted, and why', () => {
    const root = tempDirForTest('mam-codex-trust-');
    expect(codexTrust(root, { HOME: root })).toEqual({ trusted: false, configFile: path.join(root, '.codex', 'config.toml'), problem: 'no such file' });
    const { env } = world({}, 'model = [unclosed\n');
    expect(codexTrust(root, env)).toMatchObject({ trusted: false, problem: expect.any(String) });
  });

  it('the file: $CODEX_HOME/config.toml, else ~/.codex/config.toml', () => {
    expect(codexConfigFile({ CODEX_HOME: '/c', HOME: '/h' })).toBe('/c/config.toml');
    expect(codexConfigFile({ HOME: '/h' })).toBe('/h/.codex/config.toml');
  });
});
