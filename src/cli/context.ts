import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { type MamConfig, configSecrets, loadConfig } from '../core/config/config.ts';
import type { DestinationStream, Logger } from '../core/log.ts';
import { Registry } from '../core/registry/registry.ts';

/** Where a command writes: stdout (what a script reads) or stderr (what a person reads). */
export interface OutputStream {
  write(text: string): void;
  /** A person's terminal: JSON indented, live status lines drawn. */
  readonly isTTY: boolean;
  /** The stream itself, for the one command that hands it to a library (the MCP server's channel). */
  readonly stream: Writable;
}

/** What a command reads from stdin: a whole text up to a bound, or the stream (the MCP channel). */
export interface InputSource {
  /** stdin read whole; more than `maxBytes` is refused with a UsageError naming `where`. */
  readAll(maxBytes: number, where: string): string;
  stream(): Readable;
}

/** A command's standard streams, as `gh`'s IOStreams: the process's in a bin, strings in a test. */
export interface CommandIO {
  out: OutputStream;
  err: OutputStream;
  stdin: InputSource;
  /** Where diagnostic logs (pino JSON) go; unset: fd 2, synchronously, so that a short process loses none. */
  logDestination: DestinationStream | undefined;
}

/** What a process gives a command, injected so that a test can run the command in its own process. */
export interface CommandEnvironment {
  io: CommandIO;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Wall-clock milliseconds (Date.now in a bin). */
  now(): number;
  /** Resolves with the first SIGINT/SIGTERM (a bin), or when a test says stop. */
  stopSignal(): Promise<NodeJS.Signals>;
}

/**
 * Everything a command may use beyond its options (docs/contract.md §1 stays the command's only
 * promise): its streams, environment, clock and stop signal, and the configuration and registry,
 * each built on first use, so that `mam broker` reads no registry and a usage error loads nothing.
 */
export interface CommandContext extends CommandEnvironment {
  config(): MamConfig;
  registry(): Registry;
  /** One `warning:` line on stderr: what a command could do, but not all of it. */
  warn(message: string): void;
  /** pino JSON on stderr with every secret of the configuration (and `extraSecrets`) redacted. */
  logger(name: string, options?: { level?: string; extraSecrets?: readonly string[] }): Promise<Logger>;
}

/**
 * A command's context over `environment`; `registryDir` is `--registry DIR` (relative to the
 * command's working folder), which overrides the configuration's registry folder.
 */
export function commandContext(environment: CommandEnvironment, registryDir?: string | undefined): CommandContext {
  let config: MamConfig | undefined;
  let registry: Registry | undefined;
  const warn = (message: string) => environment.io.err.write(`warning: ${message}\n`);
  const ctx: CommandContext = {
    ...environment,
    warn,
    config() {
      if (!config) {
        config = loadConfig(environment.env, environment.cwd);
        if (registryDir !== undefined) config.registryDir = path.resolve(environment.cwd, registryDir);
      }
      return config;
    },
    registry() {
      registry ??= new Registry(ctx.config(), warn);
      return registry;
    },
    async logger(name, options = {}) {
      const { createLogger } = await import('../core/log.ts');
      const cfg = ctx.config();
      return createLogger(name, options.level ?? cfg.logLevel, [...configSecrets(cfg), ...(options.extraSecrets ?? [])], environment.io.logDestination);
    },
  };
  return ctx;
}

/** Contract §7: a public sandbox broker draws a loud warning from every command that connects. */
export async function warnIfPublicSandbox(ctx: CommandContext): Promise<void> {
  const host = ctx.config().broker.host;
  const { isPublicSandbox } = await import('../core/mqtt/broker-target.ts');
  if (!isPublicSandbox(host)) return;
  ctx.io.err.write(`WARNING: ${host} is a PUBLIC sandbox broker: anyone can read these jobs' ids, events and details. Use a private broker.\n`);
}
