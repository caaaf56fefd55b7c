import path from 'node:path';
import { type MamConfig, loadConfig } from '../core/config/config.ts';
import { Registry } from '../core/registry/registry.ts';

/**
 * What every API call may be handed; what it is not handed is loaded as a command would load it.
 * There is no registry object to pass: every change goes through the operations the API names, so
 * through the transition rules (contract §2), as with the commands.
 */
export interface ApiContextOptions {
  /** Default: `loadConfig()` (the environment, then `<workspace>/.mam.env`). */
  config?: MamConfig | undefined;
  /** `--registry DIR`: the registry folder instead of the configuration's (`<workspace>/.mam/jobs`). */
  registryDir?: string | undefined;
}

/** The configuration and registry for one call, loaded once when the caller gave none. */
export function apiContext(opts: ApiContextOptions): { config: MamConfig; registry: Registry } {
  const loaded = opts.config ?? loadConfig();
  const config = opts.registryDir === undefined ? loaded : { ...loaded, registryDir: path.resolve(opts.registryDir) };
  return { config, registry: new Registry(config) };
}
