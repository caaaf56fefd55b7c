import { Command } from 'commander';
import pkg from '../../package.json' with { type: 'json' };
import { runMain } from './run-main.ts';

/** A command of the contract: its flags, and what it does with them once parsed. */
export interface CommandSpec {
  name: string;
  summary: string;
  configure(cmd: Command): Command;
  run(opts: Record<string, unknown>, cmd: Command): Promise<number | void>;
  /** Verbs of their own (`mam-remote dispatch|run`); `run` is then never called. */
  subcommands?: CommandSpec[];
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

/** Attaches a spec to a command, capturing the exit code its action returns. */
function bind(cmd: Command, spec: CommandSpec, result: { code?: number | void }): Command {
  spec.configure(cmd.description(spec.summary));
  if (spec.subcommands) {
    for (const sub of spec.subcommands) bind(cmd.command(sub.name), sub, result);
    return cmd;
  }
  cmd.action(async (opts: Record<string, unknown>, self: Command) => {
    result.code = await spec.run(opts, self);
  });
  return cmd;
}

/** `mam-register …`: one command as its own bin. */
export function runStandalone(bin: string, spec: CommandSpec): Promise<void> {
  return runMain(async () => {
    const result: { code?: number | void } = {};
    await bind(newProgram(bin), spec, result).parseAsync(process.argv);
    return result.code;
  });
}

/** `mam <verb> …`: the umbrella, whose verbs are loaded only when named. */
export function runUmbrella(bin: string, verbs: Record<string, { summary: string; load: () => Promise<CommandSpec> }>): Promise<void> {
  return runMain(async () => {
    const program = newProgram(bin).description('MAM: delegate jobs to AI coding agents and watch them through signed MQTT events');
    const verb = process.argv[2];
    const result: { code?: number | void } = {};
    const entry = verb !== undefined ? verbs[verb] : undefined;
    if (entry) {
      bind(program.command(verb!), await entry.load(), result);
    } else {
      // Help, --version or an unknown verb: list every verb without loading any of them.
      for (const [name, v] of Object.entries(verbs)) program.command(name).description(v.summary);
    }
    await program.parseAsync(process.argv);
    return result.code;
  });
}
