import { Command } from 'commander';
import pkg from '../../package.json' with { type: 'json' };
import { runMain } from './run-main.ts';

/**
 * A command of the contract: its flags, how commander's raw values become a typed options object
 * (every problem a UsageError naming its flag), and what it does with them. `parse` and `run` are
 * apart so that tests can hold argv → options as a table (test/cli/argv.test.ts).
 */
export interface CommandSpec<O = unknown> {
  name: string;
  summary: string;
  configure(cmd: Command): Command;
  parse(raw: Record<string, unknown>): O;
  /** Resolves with the exit code, or with nothing for 0. */
  run(opts: O): Promise<number> | Promise<void>;
  /** Verbs of their own (`mam-remote dispatch|run`); `parse` and `run` are then never called. */
  subcommands?: Array<CommandSpec<never>>;
}

/** Infers `O` from `parse`, so a command's `run` is checked against its own options. */
export function defineCommand<O>(spec: CommandSpec<O>): CommandSpec<never> {
  return spec as unknown as CommandSpec<never>;
}

export const VERSION: string = pkg.version;

/** Usage errors are one line (`ERROR: unknown option '--x'`) and exit 64 via runMain. */
export function newProgram(name: string): Command {
  return new Command(name)
    .version(VERSION, '--version')
    .exitOverride()
    .allowExcessArguments(false)
    .configureOutput({ outputError: (text, write) => write(`ERROR: ${text.replace(/^error: /, '')}`) });
}

export function registryOption(cmd: Command): Command {
  return cmd.option('--registry <dir>', 'registry folder (default <root>/.mam/jobs, or MAM_REGISTRY_DIR)');
}

/** Attaches a spec to a command; `action` receives the parsed options of whichever (sub)command ran. */
function bind(cmd: Command, spec: CommandSpec<never>, action: (spec: CommandSpec<never>, raw: Record<string, unknown>) => Promise<void>): Command {
  spec.configure(cmd.description(spec.summary));
  if (spec.subcommands) {
    for (const sub of spec.subcommands) bind(cmd.command(sub.name), sub, action);
    return cmd;
  }
  cmd.action((raw: Record<string, unknown>) => action(spec, raw));
  return cmd;
}

/** Runs the spec's command with `raw`'s options; its result becomes the exit code. */
function runner(result: { code?: number | undefined }) {
  return async (spec: CommandSpec<never>, raw: Record<string, unknown>) => {
    result.code = (await spec.run(spec.parse(raw) as never)) ?? undefined;
  };
}

/** `mam-register …`: one command as its own bin. */
export function runStandalone(bin: string, spec: CommandSpec<never>): Promise<void> {
  return runMain(async () => {
    const result: { code?: number | undefined } = {};
    await bind(newProgram(bin), spec, runner(result)).parseAsync(process.argv);
    return result.code;
  });
}

/** `mam <verb> …`: the umbrella, whose verbs are loaded only when named. */
export function runUmbrella(bin: string, verbs: Record<string, { summary: string; load: () => Promise<CommandSpec<never>> }>): Promise<void> {
  return runMain(async () => {
    const program = newProgram(bin).description('MAM: delegate jobs to AI coding agents and watch them through signed MQTT events');
    const verb = process.argv[2];
    const result: { code?: number | undefined } = {};
    const entry = verb !== undefined ? verbs[verb] : undefined;
    if (entry) {
      bind(program.command(verb!), await entry.load(), runner(result));
    } else {
      // Help, --version or an unknown verb: list every verb without loading any of them.
      for (const [name, v] of Object.entries(verbs)) program.command(name).description(v.summary);
    }
    await program.parseAsync(process.argv);
    return result.code;
  });
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
