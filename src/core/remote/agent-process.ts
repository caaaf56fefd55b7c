import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';

/** Contract §6: SIGTERM, then SIGKILL after 5 s. */
export const KILL_GRACE_MS = 5_000;

export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** How an agent is started, besides its command and environment. */
export interface AgentProcessOptions {
  cwd?: string | undefined;
  /** A file read as the agent's stdin (its prompt); without one, stdin is empty. */
  stdinFile?: string | undefined;
}

/**
 * The agent's command, run through `sh -c` in its own process group (so a stop reaches everything
 * it started), its stdout sent to our stderr so that our stdout stays JSON lines.
 */
export class AgentProcess {
  readonly exited: Promise<AgentExit>;
  private readonly child: ChildProcess;
  private done = false;

  constructor(command: string, env: NodeJS.ProcessEnv, options: AgentProcessOptions = {}) {
    const stdin = options.stdinFile === undefined ? 'ignore' : openSync(options.stdinFile, 'r');
    try {
      this.child = spawn('sh', ['-c', command], { env, cwd: options.cwd, stdio: [stdin, process.stderr, process.stderr], detached: true });
    } finally {
      // The child has its own copy of the descriptor.
      if (typeof stdin === 'number') closeSync(stdin);
    }
    this.exited = new Promise((resolve) => {
      this.child.on('error', () => {
        this.done = true;
        resolve({ code: 127, signal: null });
      });
      this.child.on('exit', (code, signal) => {
        this.done = true;
        resolve({ code, signal });
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** SIGTERM to the group, SIGKILL after the grace period; resolves when the command has ended. */
  async stop(graceMs = KILL_GRACE_MS): Promise<AgentExit> {
    if (!this.done) {
      this.signal('SIGTERM');
      const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
      // Whatever the shell left behind in its group goes too.
      this.signal('SIGKILL');
    }
    return this.exited;
  }

  private signal(sig: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, sig);
    } catch {
      // The group is already gone.
    }
  }
}

export function describeExit(exit: AgentExit): string {
  return exit.signal ? `agent killed by ${exit.signal}` : `agent exited with code ${exit.code}`;
}
