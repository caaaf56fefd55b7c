import { readFlagFile } from './flag-file.ts';
import type { CommandEnvironment, OutputStream } from './context.ts';

function outputOf(stream: NodeJS.WriteStream): OutputStream {
  return { write: (text) => void stream.write(text), isTTY: stream.isTTY === true, stream };
}

/**
 * The process's own streams, environment and signals, for a bin (src/cli/run-main.ts). The stop
 * signal's handlers are installed on first ask, before the work starts, so that none is missed;
 * they are one-shot, so a second signal during a slow shutdown ends the process at once.
 */
export function processEnvironment(): CommandEnvironment {
  let stop: Promise<NodeJS.Signals> | undefined;
  return {
    io: {
      out: outputOf(process.stdout),
      err: outputOf(process.stderr),
      stdin: {
        readAll: (maxBytes, where) => readFlagFile('-', { where, maxBytes }),
        stream: () => process.stdin,
      },
      // Unset: createLogger's synchronous fd 2, so that a short process loses no line.
      logDestination: undefined,
    },
    env: process.env,
    cwd: process.cwd(),
    now: Date.now,
    stopSignal() {
      stop ??= new Promise((resolve) => {
        process.once('SIGINT', () => resolve('SIGINT'));
        process.once('SIGTERM', () => resolve('SIGTERM'));
      });
      return stop;
    },
  };
}
