import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { Readable, Writable } from 'node:stream';
import { MAM } from '../../src/cli/verbs.ts';
import type { CommandEnvironment, OutputStream } from '../../src/cli/context.ts';
import type { CommandOutcome } from '../../src/cli/exit-codes.ts';
import { boundedText } from '../../src/cli/flag-file.ts';
import { type CommandSpec, type Umbrella, runCommandLine } from '../../src/cli/program.ts';
import type { RunResult, Workspace } from './cli.ts';

/** The bins, by name, as their launchers bind them (src/bin/): loaded only when a test names one. */
const BINS: Record<string, () => Promise<CommandSpec<never> | Umbrella>> = {
  mam: async () => MAM,
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
  /** Fail the test when the command has not ended by then (a hang reads as this, not as the test's timeout). */
  timeoutMs?: number;
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
  const run = () => withDeadline(`${bin} ${args.join(' ')}`, opts.timeoutMs, runCommandLine(bin, entry, args, environment));
  const { code, outcome } = await withoutLeaks(`${bin} ${args.join(' ')}`, run);
  return { code, stdout, stderr, outcome };
}

async function withDeadline<T>(what: string, ms: number | undefined, work: Promise<T>): Promise<T> {
  if (ms === undefined) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still running after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
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

/**
 * What keeps a process alive (the async_hooks types of handles and timers). Requests (a write, a
 * DNS lookup, a file read) end by themselves and are not counted.
 */
const LIVING = new Set([
  'Timeout',
  'TCPWRAP',
  'TCPSERVERWRAP',
  'PIPEWRAP',
  'PIPESERVERWRAP',
  'PROCESSWRAP',
  'UDPWRAP',
  'TTYWRAP',
  'SIGNALWRAP',
  'FSEVENTWRAP',
  'STATWATCHER',
]);

/**
 * The command's own async context: a resource created inside it is the command's. A socket that an
 * in-process broker of the test accepts meanwhile, or a client the test connects, is created in the
 * test's context and is not counted.
 */
const commandScope = new AsyncLocalStorage<string>();

/** Resources the commands created, until destroyed: what is left of them at the end was left behind. */
const created = new Map<number, { type: string; resource: { hasRef?: () => boolean } }>();
const tracker = createHook({
  init(id, type, _trigger, resource) {
    if (LIVING.has(type) && commandScope.getStore() !== undefined) created.set(id, { type, resource: resource as { hasRef?: () => boolean } });
  },
  destroy(id) {
    created.delete(id);
  },
});

/** Those that still keep the process alive (an unref'd timer or child does not), by type. */
function leftBehind(): string[] {
  const counts = new Map<string, number>();
  for (const { type, resource } of created.values()) {
    if (resource.hasRef?.() === false) continue;
    counts.set(type, (counts.get(type) ?? 0) + 1);
  }
  return [...counts].map(([type, n]) => `${type} ×${n}`);
}

/** A socket's close takes a turn or two of the loop, a peer's FIN a little longer: the bound for "left behind". */
const SETTLE_MS = 2000;

/** Commands running now (their checks are one: when the last of them ends). */
let running = 0;

/**
 * Runs `fn`, then fails if a socket, server, child or timer it created still lives (the model is
 * MQTT.js's test/node/helpers/leaked.ts): a command that ends must leave nothing running, or its
 * bin would linger and the library API would leak in a caller's process. Commands run side by
 * side are checked together, when the last of them ends.
 */
export async function withoutLeaks<T>(what: string, fn: () => Promise<T>): Promise<T> {
  if (running++ === 0) {
    created.clear();
    tracker.enable();
  }
  let result: T;
  try {
    result = await commandScope.run(what, fn);
  } finally {
    running--;
  }
  if (running > 0) return result;
  try {
    const deadline = Date.now() + SETTLE_MS;
    let left = leftBehind();
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20).unref());
      if (running > 0) return result;
      left = leftBehind();
    }
    if (left.length > 0) throw new Error(`${what}: left behind ${left.join(', ')}`);
    return result;
  } finally {
    if (running === 0) {
      tracker.disable();
      created.clear();
    }
  }
}
