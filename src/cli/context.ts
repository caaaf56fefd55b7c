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
