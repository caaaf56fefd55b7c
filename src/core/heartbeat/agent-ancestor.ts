import path from 'node:path';
import { type ProcInfo, readProc } from './proc.ts';

/**
 * Command names of agent CLIs (contract §5). The heartbeat watches the agent itself, not the
 * shell it ran `mam-publish` from: agents run each tool call in a fresh `sh -c` that exits at once.
 */
export const AGENT_CLIS: readonly string[] = ['claude', 'codex', 'gemini', 'aider', 'opencode', 'cursor-agent', 'goose', 'amp', 'qwen', 'crush'];

/** Interpreters that run an agent as a script: `node …/bin/claude`, `python3 …/bin/aider`. */
const INTERPRETER = /^(node|nodejs|bun|deno|python[0-9.]*|pypy[0-9.]*)$/;

/** Walking stops here: deeper than any real tree, and a loop in a racing /proc cannot spin. */
const MAX_DEPTH = 64;

const commandName = (arg: string): string => path.basename(arg).replace(/\.(c|m)?js$|\.py$/, '');

/** The agent CLI a process runs, by its kernel name, its argv[0], or the script its interpreter runs. */
export function agentCliOf(info: ProcInfo): string | undefined {
  const names = [info.comm];
  const [first, ...rest] = info.argv;
  if (first !== undefined) {
    names.push(commandName(first));
    // The script is the first argument that is not an option of the interpreter.
    const script = rest.find((a) => !a.startsWith('-'));
    if (INTERPRETER.test(commandName(first)) && script !== undefined) names.push(commandName(script));
  }
  return names.find((n) => AGENT_CLIS.includes(n));
}

/** `startPid` itself or its nearest ancestor that is an agent CLI; undefined when there is none. */
export function nearestAgentAncestor(startPid: number, read: (pid: number) => ProcInfo | undefined = readProc): number | undefined {
  let pid = startPid;
  for (let depth = 0; depth < MAX_DEPTH && pid > 1; depth++) {
    const info = read(pid);
    if (info === undefined) return undefined;
    if (agentCliOf(info) !== undefined) return pid;
    pid = info.ppid;
  }
  return undefined;
}

/**
 * `--watch-pid`'s default: the nearest agent-CLI ancestor of the publishing command, else its
 * parent (the process that ran `mam-publish`).
 */
export function defaultWatchPid(parentPid: number = process.ppid, read?: (pid: number) => ProcInfo | undefined): number {
  return nearestAgentAncestor(parentPid, read) ?? parentPid;
}
