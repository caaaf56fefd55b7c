import path from 'node:path';
import { type MamConfig, loadConfig } from '../core/config/config.ts';
import { Registry } from '../core/registry/registry.ts';

export interface CommandContext {
  config: MamConfig;
  registry: Registry;
}

/** One `warning:` line on stderr: what a command could do, but not all of it. */
export function warn(message: string): void {
  process.stderr.write(`warning: ${message}\n`);
}

/** Configuration and registry for a command; `--registry DIR` overrides the registry folder. */
export function loadContext(opts: { registry?: string | undefined }): CommandContext {
  const config = loadConfig();
  if (opts.registry !== undefined) config.registryDir = path.resolve(opts.registry);
  return { config, registry: new Registry(config, warn) };
}

/** Contract §7: a public sandbox broker draws a loud warning from every command that connects. */
export async function warnIfPublicSandbox(config: MamConfig): Promise<void> {
  const { isPublicSandbox } = await import('../core/mqtt/broker-target.ts');
  if (!isPublicSandbox(config.broker.host)) return;
  process.stderr.write(
    `WARNING: ${config.broker.host} is a PUBLIC sandbox broker: anyone can read these jobs' ids, events and details. Use a private broker.\n`,
  );
}
