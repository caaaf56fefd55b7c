import { type MamConfig, loadConfig } from '../core/config/config.ts';
import { Registry } from '../core/registry/registry.ts';

/** What every API call may be handed; what it is not handed is loaded as a command would load it. */
export interface ApiContextOptions {
  /** Default: `loadConfig()` (the environment, then `<workspace>/.mam.env`). */
  config?: MamConfig | undefined;
  /** Default: the registry of `config` (`<workspace>/.mam/jobs`). */
  registry?: Registry | undefined;
}

/** The configuration and registry for one call, loaded once when the caller gave none. */
export function apiContext(opts: ApiContextOptions): { config: MamConfig; registry: Registry } {
  const config = opts.config ?? loadConfig();
  return { config, registry: opts.registry ?? new Registry(config) };
}
