import { Command } from 'commander';
import pkg from '../../package.json' with { type: 'json' };
import { type CommandContext, type CommandEnvironment, commandContext } from './context.ts';
import { type CommandOutcome, type ExitCode, outcomeExit, reportError } from './exit-codes.ts';

/**
 * A command of the contract: its flags, how commander's raw values become a typed options object
 * (every problem a UsageError naming its flag), and what it does with them. `parse` and `run` are
 * apart so that tests can hold argv → options as a table (test/cli/argv.test.ts).
 */
export interface CommandSpec<O = unknown> {
  name: string;
  summary: string;
  /** Shown under `--help`: what a user would type, each with a line that says what it does. */
  examples?: ReadonlyArray<Example>;
  configure(cmd: Command): Command;
  parse(raw: Record<string, unknown>): O;
  /** Ends with what happened (nothing: done, exit 0); src/cli/exit-codes.ts turns that into the exit code. */
  run(opts: O, ctx: CommandContext): Promise<CommandOutcome | undefined> | Promise<void>;
  /** Verbs of their own (`mam-remote dispatch|run`); `parse` and `run` are then never called. */
  subcommands?: Array<CommandSpec<never>>;
}

/** `['watch one job and branch on its exit code', 'mam-subscribe --job 3f2a9c1d']`. */
export type Example = readonly [what: string, command: string];

/** Infers `O` from `parse`, so a command's `run` is checked against its own options. */
export function defineCommand<O>(spec: CommandSpec<O>): CommandSpec<never> {
  return spec as unknown as CommandSpec<never>;
}

/** The umbrella's verbs, each loaded only when named (src/cli/verbs.ts). */
export type Verbs = Record<string, { summary: string; load: () => Promise<CommandSpec<never>> }>;

export const VERSION: string = pkg.version;

/** Usage errors are one line (`ERROR: unknown option '--x'`) and exit 64; help and usage go to the command's streams. */
export function newProgram(name: string, io?: CommandEnvironment['io']): Command {
  const program = new Command(name).version(VERSION, '--version').exitOverride().allowExcessArguments(false);
  return program.configureOutput({
    outputError: (text, write) => write(`ERROR: ${text.replace(/^error: /, '')}`),
    ...(io ? { writeOut: (text: string) => io.out.write(text), writeErr: (text: string) => io.err.write(text) } : {}),
  });
}

export function registryOption(cmd: Command): Command {
  return cmd.option('--registry <dir>', 'registry folder (default <root>/.mam/jobs, or MAM_REGISTRY_DIR)');
}

/** `--help`'s examples block, in the shape of gh's and mosquitto_sub's: what it does, then the line. */
export function examplesHelp(bin: string, examples: ReadonlyArray<Example>): string {
  return `\nExamples:\n${examples.map(([what, command]) => `  # ${what}\n  $ ${command.startsWith('mam') ? command : `${bin} ${command}`}\n`).join('')}`;
}

/** Attaches a spec to a command; `action` receives the parsed options of whichever (sub)command ran. */
function bind(cmd: Command, spec: CommandSpec<never>, action: (spec: CommandSpec<never>, raw: Record<string, unknown>) => Promise<void>): Command {
  spec.configure(cmd.description(spec.summary));
  if (spec.examples?.length) cmd.addHelpText('after', examplesHelp(fullName(cmd), spec.examples));
  if (spec.subcommands) {
    for (const sub of spec.subcommands) bind(cmd.command(sub.name), sub, action);
    return cmd;
  }
  cmd.action((raw: Record<string, unknown>) => action(spec, raw));
  return cmd;
}

function fullName(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** What a command line came to: the exit code, and the outcome when the command ran to one. */
export interface CommandResult {
  code: ExitCode;
  outcome?: CommandOutcome | undefined;
}

/**
 * Runs one command line in this process: `argv` (after the bin's name) through commander, the
 * spec's parse and run, to the exit code. Output goes only to `environment.io`; nothing here ends
 * the process (a bin's runMain does), so a test runs a command exactly as its bin does.
 */
export async function runCommandLine(
  bin: string,
  entry: CommandSpec<never> | Verbs,
  argv: readonly string[],
  environment: CommandEnvironment,
): Promise<CommandResult> {
  const { io } = environment;
  const program = newProgram(bin, io);
  let outcome: CommandOutcome | undefined;
  const action = async (spec: CommandSpec<never>, raw: Record<string, unknown>) => {
    const opts = spec.parse(raw);
    const registry = (opts as { registry?: unknown } | undefined)?.registry;
    const ctx = commandContext(environment, typeof registry === 'string' ? registry : undefined);
    outcome = (await spec.run(opts, ctx)) ?? { kind: 'done' };
  };
  try {
    if (isSpec(entry)) {
      bind(program, entry, action);
    } else {
      program.description('MAM: delegate jobs to AI coding agents and watch them through signed MQTT events');
      const verb = argv[0];
      const named = verb !== undefined && Object.hasOwn(entry, verb) ? entry[verb] : undefined;
      if (named) bind(program.command(verb!), await named.load(), action);
      // Help, --version or an unknown verb: list every verb without loading any of them.
      else for (const [name, v] of Object.entries(entry)) program.command(name).description(v.summary);
    }
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    return { code: reportError(err, (text) => io.err.write(text), environment.env) };
  }
  return { code: outcome ? outcomeExit(outcome) : 0, outcome };
}

function isSpec(entry: CommandSpec<never> | Verbs): entry is CommandSpec<never> {
  return typeof (entry as CommandSpec<never>).configure === 'function';
}

/**
 * argv (after the command name, e.g. `['--job', 'abcd1234']`) → the typed options `run` would get.
 * Nothing runs and nothing is printed; a usage problem is thrown (CommanderError or UsageError).
 */
export async function parseArgv<O>(spec: CommandSpec<O>, argv: string[]): Promise<O> {
  let parsed: { value: O } | undefined;
  const program = newProgram('test').configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  bind(program, spec as unknown as CommandSpec<never>, async (which, raw) => {
    parsed = { value: which.parse(raw) as O };
  });
  await program.parseAsync(argv, { from: 'user' });
  if (!parsed) throw new Error('parseArgv: no command ran');
  return parsed.value;
}
