import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT, binPath } from '../helpers/cli.ts';

/**
 * Injection into shells and hook commands (issue 27). The hook commands MAM writes for Claude and
 * Codex (run by the agent with `sh -c`) name files under the workspace, and the brief reaches the
 * agent's prompt: here the workspace folder and the brief hold `'`, `"`, `$(…)`, backticks, `;`,
 * `&`, `|` and a newline, each of which would create a PWNED file if any shell evaluated it. The
 * stand-in agents (test/fixtures/agents/bin/) run their hooks through `sh -c` as the real CLIs do.
 */

const STAND_INS = path.join(REPO_ROOT, 'test/fixtures/agents/bin');
const HOSTILE = `it's "q" $(touch PWNED-1) \`touch PWNED-2\`; touch PWNED-3 & touch PWNED-4 | x`;
const BRIEF = `${HOSTILE}\nnext line; $(touch PWNED-5) '$(touch PWNED-6)' "\`touch PWNED-7\`" \\`;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

function delegate(root: string, env: NodeJS.ProcessEnv, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [binPath('mam'), 'delegate', '--json', ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Every PWNED file anywhere under `dir`. */
function pwned(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => path.basename(f).startsWith('PWNED'));
}

describe('hostile shell input: a workspace folder and a brief made of shell syntax', () => {
  let broker: TestBroker;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  it.each(['claude', 'codex'])('%s: the hooks run, the brief arrives verbatim, no shell evaluates any of it', async (agent) => {
    const outer = mkdtempSync(path.join(os.tmpdir(), 'mam-hostile-shell-'));
    try {
      const root = path.join(outer, HOSTILE);
      mkdirSync(path.join(root, '.git'), { recursive: true });
      const out = path.join(outer, 'out');
      mkdirSync(out);
      const env = {
        PATH: `${STAND_INS}${path.delimiter}${process.env.PATH}`,
        HOME: root,
        MAM_REAL_ROOT: root,
        MAM_LOG_LEVEL: 'warn',
        MQTT_BROKER: '127.0.0.1',
        MQTT_PORT: String(broker.port),
        STAND_IN_PROMPT_OUT: path.join(out, 'prompt'),
      };
      const r = await delegate(root, env, ['--agent', agent, '--brief', BRIEF]);
      expect(r.code, r.stderr).toBe(0);
      // started and completed come from the hooks, so each hook command ran through `sh -c`.
      const events = r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).event);
      expect(events).toEqual(['started', 'completed']);
      expect(readFileSync(path.join(out, 'prompt'), 'utf8').endsWith(`# Your task\n\n${BRIEF}\n`)).toBe(true);
      expect(existsSync(path.join(root, '.mam'))).toBe(true);
      expect(pwned(outer)).toEqual([]);
      expect(pwned(process.cwd())).toEqual([]);
    } finally {
      rmSync(outer, { recursive: true, force: true });
    }
  });
});
