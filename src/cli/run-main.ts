import { ExitCode, reportError } from './exit-codes.ts';

/**
 * The only place that ends the process: a command's code, or its error turned into one line on
 * stderr and the contract's code (src/cli/exit-codes.ts).
 */
export async function runMain(main: () => Promise<number | undefined>): Promise<void> {
  // `mam jobs --json | head -1`: a closed stdout ends the command quietly.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
  let code: number;
  try {
    code = (await main()) ?? ExitCode.ok;
  } catch (err) {
    code = reportError(err, (text) => process.stderr.write(text));
  }
  process.exitCode = code;
  // Flush what is buffered for a pipe, then leave even if a socket or timer lingers.
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  process.exit(code);
}
