import path from 'node:path';
import { type MamConfig, loadConfig } from '../core/config/config.ts';
import { Registry } from '../core/registry/registry.ts';

export interface CommandContext {
  config: MamConfig;
  registry: Registry;
}

/** Configuration and registry for a command; `--registry DIR` overrides the registry folder. */
export function loadContext(opts: { registry?: unknown }): CommandContext {
  const config = loadConfig();
  if (typeof opts.registry === 'string') config.registryDir = path.resolve(opts.registry);
  return { config, registry: new Registry(config) };
}

/** Contract §7: a public sandbox broker draws a loud warning from every command that connects. */
export async function warnIfPublicSandbox(config: MamConfig): Promise<void> {
  const { isPublicSandbox } = await import('../core/mqtt/broker-target.ts');
  if (!isPublicSandbox(config.broker.host)) return;
  process.stderr.write(
    `WARNING: ${config.broker.host} is a PUBLIC sandbox broker: anyone can read these jobs' ids, events and details. Use a private broker.\n`,
  );
}
