import { Readable, Writable } from 'node:stream';
import { VERBS } from '../../src/cli/verbs.ts';
import type { CommandEnvironment, OutputStream } from '../../src/cli/context.ts';
import type { CommandOutcome } from '../../src/cli/exit-codes.ts';
import { boundedText } from '../../src/cli/flag-file.ts';
import { type CommandSpec, type Verbs, runCommandLine } from '../../src/cli/program.ts';
import type { RunResult, Workspace } from './cli.ts';

/** The bins, by name, as their launchers bind them (src/bin/): loaded only when a test names one. */
const BINS: Record<string, () => Promise<CommandSpec<never> | Verbs>> = {
  mam: async () => VERBS,
  'mam-register': async () => (await import('../../src/cli/commands/register.ts')).registerCommand,
  'mam-pick': async () => (await import('../../src/cli/commands/pick.ts')).pickCommand,
  'mam-publish': async () => (await import('../../src/cli/commands/publish.ts')).publishCommand,
  'mam-subscribe': async () => (await import('../../src/cli/commands/subscribe.ts')).subscribeCommand,
  'mam-close': async () => (await import('../../src/cli/commands/close.ts')).closeCommand,
  'mam-remote': async () => (await import('../../src/cli/commands/remote.ts')).remoteCommand,
};

export interface InProcessResult extends RunResult {
  code: number;
  /** What the command ended with, when it ran to an outcome (not on a usage error or a thrown one). */
  outcome?: CommandOutcome | undefined;
}

export interface InProcessOptions {
  /** stdin, whole (default empty). */
  input?: string;
  env?: NodeJS.ProcessEnv;
  /** stdout is a person's terminal. */
  tty?: boolean;
  /** Resolves as SIGINT/SIGTERM would for a bin (default: never). */
  stop?: Promise<NodeJS.Signals>;
  /** Fail when the command leaves a socket, timer or handle behind (default true; off for commands run side by side). */
  leakCheck?: boolean;
}

/**
 * Runs a bin's command line in this process, exactly as its launcher does (src/cli/run-main.ts
 * without the exit): argv in; stdout, stderr, exit code and outcome out. The same workspace and
 * environment as `runBin`, so a test can move between the two; what needs a process of its own
 * (kill -9, signals, start-up, the heartbeat's detached timer) stays with `runBin`.
 */
export async function runInProcess(bin: string, args: string[], ws: Workspace, opts: InProcessOptions = {}): Promise<InProcessResult> {
  const load = BINS[bin];
  if (!load) throw new Error(`runInProcess: no bin ${bin}`);
  const entry = await load();
  let stdout = '';
  let stderr = '';
  const out = textOutput((t) => (stdout += t), opts.tty ?? false);
  const err = textOutput((t) => (stderr += t), false);
  const input = opts.input ?? '';
  const environment: CommandEnvironment = {
    io: {
      out,
      err,
      stdin: { readAll: (maxBytes, where) => boundedText(input, { maxBytes, where }), stream: () => Readable.from([input]) },
      logDestination: { write: (line: string) => void (stderr += line) },
    },
    env: { ...ws.env, ...opts.env },
    cwd: ws.root,
    now: Date.now,
    stopSignal: () => opts.stop ?? new Promise<NodeJS.Signals>(() => undefined),
  };
  const run = () => runCommandLine(bin, entry, args, environment);
  const { code, outcome } = opts.leakCheck === false ? await run() : await withoutLeaks(`${bin} ${args.join(' ')}`, run);
  return { code, stdout, stderr, outcome };
}

function textOutput(append: (text: string) => void, isTTY: boolean): OutputStream {
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      append(chunk.toString());
      callback();
    },
  });
  return { write: append, isTTY, stream };
}

/** Handles Node counts as keeping the process alive, by type (TCPWRAP, Timeout, FSReqCallback…). */
function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

function excess(now: Map<string, number>, before: Map<string, number>): string[] {
  return [...now].filter(([type, n]) => n > (before.get(type) ?? 0)).map(([type, n]) => `${type} ×${n - (before.get(type) ?? 0)}`);
}

/** A socket's close takes a turn or two of the loop, a peer's FIN a little longer: the bound for "left behind". */
const SETTLE_MS = 2000;

/**
 * Runs `fn`, then fails if it left more handles than there were before it started (the model is
 * MQTT.js's test/node/helpers/leaked.ts): a command that ends must leave nothing running, or its
 * bin would linger and the library API would leak in a caller's process. Only for code that runs
 * alone: a broker or client the test starts meanwhile would count as the command's.
 */
export async function withoutLeaks<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const before = activeResources();
  const result = await fn();
  const deadline = Date.now() + SETTLE_MS;
  let left = excess(activeResources(), before);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    left = excess(activeResources(), before);
  }
  if (left.length > 0) throw new Error(`${what}: left behind ${left.join(', ')}`);
  return result;
}
