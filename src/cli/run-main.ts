import { processEnvironment } from './process-environment.ts';
import { type CommandSpec, type Verbs, runCommandLine } from './program.ts';

/**
 * A bin's whole life, and the only place that ends the process: its command line run with the
 * process's streams (src/cli/program.ts), then exit with the code the contract gives the outcome.
 */
export async function runMain(bin: string, entry: CommandSpec<never> | Verbs): Promise<void> {
  // `mam jobs --json | head -1`: a closed stdout ends the command quietly.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
  const { code } = await runCommandLine(bin, entry, process.argv.slice(2), processEnvironment());
  process.exitCode = code;
  // Flush what is buffered for a pipe, then leave even if a socket or timer lingers.
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  process.exit(code);
}
