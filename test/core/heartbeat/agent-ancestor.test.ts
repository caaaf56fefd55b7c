import { spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { agentCliOf, defaultWatchPid, nearestAgentAncestor } from '../../../src/core/heartbeat/agent-ancestor.ts';
import { type ProcInfo, readProc } from '../../../src/core/heartbeat/proc.ts';
import { tempDirForTest } from '../../helpers/temp-dir.ts';

// A node process that starts `sh -c 'sleep 60'` and prints the shell's pid: the shell stands for the
// one an agent runs `mam-publish` from, the node process for the agent.
const AGENT_BODY = `
const { spawn } = require('node:child_process');
const c = spawn('sh', ['-c', 'sleep 60; :'], { stdio: 'ignore' });
console.log(c.pid);
setInterval(() => {}, 1000);
`;

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** Spawns `command args…` running AGENT_BODY; resolves with its pid and its grandchild shell's pid. */
async function agentTree(command: string, args: string[]): Promise<{ agent: number; shell: number }> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  started.push(child.pid!);
  const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
  const shell = Number(line);
  started.push(shell); // the shell's sleep would otherwise linger its 60 s
  return { agent: child.pid!, shell };
}

describe('the watched process (real process tree through /proc)', () => {
  it('finds an agent CLI by its executable name (`codex`, a symlink to node)', async () => {
    const dir = tempDirForTest();
    const codex = path.join(dir, 'codex');
    symlinkSync(process.execPath, codex);
    const { agent, shell } = await agentTree(codex, ['-e', AGENT_BODY]);
    expect(agentCliOf(readProc(agent)!)).toBe('codex');
    expect(nearestAgentAncestor(shell)).toBe(agent);
    expect(defaultWatchPid(shell)).toBe(agent);
  });

  it('finds an agent CLI run as a script by an interpreter (`node …/bin/claude`)', async () => {
    const dir = tempDirForTest();
    mkdirSync(path.join(dir, 'bin'));
    const script = path.join(dir, 'bin', 'claude');
    writeFileSync(script, AGENT_BODY);
    const { agent, shell } = await agentTree(process.execPath, ['--no-warnings', script]);
    expect(agentCliOf(readProc(agent)!)).toBe('claude');
    expect(nearestAgentAncestor(shell)).toBe(agent);
  });

  it('reads a live process: its parent, its state, its argv', () => {
    const me = readProc(process.pid)!;
    expect(me.ppid).toBe(process.ppid);
    expect(me.state).toMatch(/^[RS]$/);
    expect(me.argv).toContain(process.argv[1]);
    expect(readProc(2 ** 22 + 7)).toBeUndefined();
  });
});

describe('the walk (a fake /proc)', () => {
  const table = (rows: Array<[number, number, string, string[]]>) => {
    const byPid = new Map<number, ProcInfo>(rows.map(([pid, ppid, comm, argv]) => [pid, { pid, ppid, comm, state: 'S', argv }]));
    return (pid: number) => byPid.get(pid);
  };

  it('falls back to the parent of the publishing command when no ancestor is an agent', () => {
    const read = table([
      [30, 20, 'sh', ['sh', '-c', 'mam-publish']],
      [20, 10, 'bash', ['-bash']],
      [10, 1, 'sshd', ['sshd: me']],
    ]);
    expect(nearestAgentAncestor(30, read)).toBeUndefined();
    expect(defaultWatchPid(30, read)).toBe(30);
  });

  it('takes the nearest agent, not the outermost, and sees through interpreters and their options', () => {
    const read = table([
      [40, 30, 'sh', ['/bin/sh', '-c', 'mam-publish']],
      [30, 20, 'MainThread', ['/usr/bin/node', '--max-old-space-size=4096', '/usr/lib/node_modules/@openai/codex/bin/codex.js']],
      [20, 10, 'python3', ['python3', '/home/me/.local/bin/aider']],
      [10, 1, 'claude', ['claude']],
    ]);
    expect(defaultWatchPid(40, read)).toBe(30);
    expect(agentCliOf(read(20)!)).toBe('aider');
    expect(agentCliOf(read(10)!)).toBe('claude');
  });

  it('does not take a look-alike (`codex-helper`, `claudette`, a file argument named claude)', () => {
    const read = table([
      [50, 40, 'codex-helper', ['/opt/codex-helper']],
      [40, 30, 'vim', ['vim', 'claude']],
      [30, 1, 'claudette', ['claudette']],
    ]);
    expect(nearestAgentAncestor(50, read)).toBeUndefined();
  });

  it('stops at a vanished process and at a loop in the table', () => {
    expect(nearestAgentAncestor(7, table([[7, 8, 'sh', []]]))).toBeUndefined();
    expect(
      nearestAgentAncestor(
        7,
        table([
          [7, 8, 'sh', []],
          [8, 7, 'sh', []],
        ]),
      ),
    ).toBeUndefined();
  });
});
