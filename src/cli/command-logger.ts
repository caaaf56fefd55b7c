import { configSecrets } from '../core/config/config.ts';
import { type Logger, createLogger } from '../core/log.ts';
import type { CommandContext } from './context.ts';

/**
 * A long-running command's diagnostic log: pino JSON on the command's stderr, at MAM_LOG_LEVEL, with
 * every secret of the configuration (and `extraSecrets`, e.g. webhook URLs) redacted. Apart from
 * the context so that the short commands' bundles (mam-publish: every agent event is one) carry no pino.
 */
export function commandLogger(ctx: CommandContext, name: string, options: { level?: string; extraSecrets?: readonly string[] } = {}): Logger {
  const config = ctx.config();
  return createLogger(name, options.level ?? config.logLevel, [...configSecrets(config), ...(options.extraSecrets ?? [])], ctx.io.logDestination);
}
