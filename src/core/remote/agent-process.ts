import { type ChildProcess, spawn } from 'node:child_process';

/** Contract §6: SIGTERM, then SIGKILL after 5 s. */
export const KILL_GRACE_MS = 5_000;

export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * The agent's command, run through `sh -c` in its own process group (so a stop reaches everything
 * it started), its stdout sent to our stderr so that our stdout stays JSON lines.
 */
export class AgentProcess {
  readonly exited: Promise<AgentExit>;
  private readonly child: ChildProcess;
  private done = false;

  constructor(command: string, env: NodeJS.ProcessEnv, cwd?: string) {
    this.child = spawn('sh', ['-c', command], { env, cwd, stdio: ['ignore', process.stderr, process.stderr], detached: true });
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
