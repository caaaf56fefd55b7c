import { CommanderError } from 'commander';
import { ExitCode, MamError } from '../core/errors.ts';

/**
 * The only place that ends the process. Typed errors become one line on stderr and the contract's
 * exit code; a stack trace only with MAM_DEBUG=1.
 */
export async function runMain(main: () => Promise<number | void>): Promise<void> {
  // `mam jobs --json | head -1`: a closed stdout ends the command quietly.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
  let code: number;
  try {
    code = (await main()) ?? ExitCode.ok;
  } catch (err) {
    code = reportError(err);
  }
  process.exitCode = code;
  // Flush what is buffered for a pipe, then leave even if a socket or timer lingers.
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  process.exit(code);
}

export function reportError(err: unknown): number {
  const debug = /^(1|true|yes)$/i.test(process.env.MAM_DEBUG ?? '');
  if (err instanceof CommanderError) {
    // Commander has already printed its one-line message; help and --version are successes.
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return ExitCode.ok;
    return ExitCode.usage;
  }
  if (err instanceof MamError) {
    process.stderr.write(`ERROR: ${err.message}\n`);
    if (debug && err.stack) process.stderr.write(`${err.stack}\n`);
    return err.exitCode;
  }
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`ERROR: ${message.split('\n')[0]}\n`);
  if (debug && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  return ExitCode.failure;
}
