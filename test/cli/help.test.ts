import { beforeEach, afterEach, describe, expect, it } from 'vitest';
import { MAM, VERBS } from '../../src/cli/verbs.ts';
import { type Workspace, makeWorkspace } from '../helpers/cli.ts';
import { runInProcess } from '../helpers/in-process.ts';

let ws: Workspace;
beforeEach(() => {
  ws = makeWorkspace();
});
afterEach(() => ws.cleanup());

/** Every command line a user can ask `--help` of: each verb, and each verb of a verb. */
async function commandLines(): Promise<string[][]> {
  const lines: string[][] = [[]];
  for (const [verb, { load }] of Object.entries(VERBS)) {
    const spec = await load();
    lines.push([verb]);
    for (const sub of spec.subcommands ?? []) lines.push([verb, sub.name]);
  }
  return lines;
}

/** The examples block of a help text: `# what` then `$ command`, as gh and mosquitto_sub's man page show them. */
function examples(help: string): Array<{ what: string; command: string }> {
  const block = help.slice(help.indexOf('\nExamples:\n'));
  return [...block.matchAll(/^ {2}# (.+)\n {2}\$ (.+)$/gm)].map((m) => ({ what: m[1]!, command: m[2]! }));
}

describe('--help shows examples', () => {
  it('every command: two or three examples, each a line that starts with the command itself', async () => {
    expect(MAM.verbs).toBe(VERBS);
    for (const words of await commandLines()) {
      const r = await runInProcess('mam', [...words, '--help'], ws);
      expect(r.code, words.join(' ')).toBe(0);
      const shown = examples(r.stdout);
      expect(shown.length, `mam ${words.join(' ')}`).toBeGreaterThanOrEqual(words.length === 0 ? 3 : 2);
      expect(shown.length, `mam ${words.join(' ')}`).toBeLessThanOrEqual(3);
      for (const { command } of shown) expect(command, `mam ${words.join(' ')}`).toMatch(new RegExp(`^${['mam', ...words].join(' ')}( |$)`));
    }
  });

  it("a bin's own name leads its examples (mam-subscribe, not mam subscribe)", async () => {
    const r = await runInProcess('mam-subscribe', ['--help'], ws);
    expect(examples(r.stdout)[0]?.command).toMatch(/^mam-subscribe --job /);
    const remote = await runInProcess('mam-remote', ['run', '--help'], ws);
    expect(examples(remote.stdout)[0]?.command).toMatch(/^mam-remote run --session /);
  });
});
