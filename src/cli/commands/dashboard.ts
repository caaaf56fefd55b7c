import * as z from 'zod/mini';
import { parseOriginList, trustedOriginSchema } from '../../core/dashboard/origin-policy.ts';
import { ConfigError } from '../../core/errors.ts';
import { warnIfPublicSandbox } from '../context.ts';
import { nonEmptyFlag, portFlag } from '../flags.ts';
import { collect, parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

/** The default port: nothing common sits there (6260 spells "mam0" on a phone keypad). */
export const DEFAULT_DASHBOARD_PORT = 6260;

const dashboardOptions = z.object({
  port: z._default(portFlag, DEFAULT_DASHBOARD_PORT),
  host: z._default(nonEmptyFlag, '127.0.0.1'),
  allowActions: z.optional(z.boolean()),
  trustedOrigin: z.optional(z.array(trustedOriginSchema)),
  registry: z.optional(z.string()),
});

const HELP = `
Serves one page that shows every job of the registry, live: counts with the ones that need
attention first (error, stalled, waiting for permission), a filterable list, and each job's
timeline. It watches the broker as \`mam-subscribe --all\` does: only events signed with the job's
token reach the page. Read-only unless --allow-actions.
Access: on a loopback address (the default) anyone on this machine may look. Any other --host needs
MAM_DASHBOARD_TOKEN (environment or .mam.env, at least 16 characters); the page then asks for it
once and keeps a session cookie. Scripts send it as "Authorization: Bearer <token>".
--allow-actions (cancel, redispatch, approve/deny from the page) also needs the token, wherever it listens.
Behind a reverse proxy: --trusted-origin https://mam.example.com (repeatable; or
MAM_DASHBOARD_TRUSTED_ORIGINS, comma-separated) lets the page log in and act through the proxy.
Prints "mam dashboard on http://host:port" on stderr once it listens; SIGINT/SIGTERM stop it (exit 0).`;

export const dashboardCommand = defineCommand({
  name: 'dashboard',
  summary: 'serve a live web page of every job (read-only unless --allow-actions)',
  configure: (cmd) =>
    registryOption(cmd)
      .option('--port <port>', `port to listen on; 0 picks a free one (default ${DEFAULT_DASHBOARD_PORT})`)
      .option('--host <address>', 'address to listen on (default 127.0.0.1; others need MAM_DASHBOARD_TOKEN)')
      .option('--allow-actions', 'let a logged-in page cancel, redispatch, approve and deny (needs MAM_DASHBOARD_TOKEN)')
      .option('--trusted-origin <origin>', "a reverse proxy's origin (https://host[:port]) whose pages may log in and act (repeatable)", collect)
      .addHelpText('after', HELP),
  parse: (raw) => parseOptions(dashboardOptions, raw),
  async run(opts, ctx) {
    // Installed before the server starts, so that no signal is missed.
    const stopped = ctx.stopSignal();
    const config = ctx.config();
    const registry = ctx.registry();
    await warnIfPublicSandbox(ctx);
    const [{ startDashboard }, { isLoopbackHost }, { mergeEnv, readEnvFile }] = await Promise.all([
      import('../../core/dashboard/dashboard.ts'),
      import('../../core/dashboard/auth-gate.ts'),
      import('../../core/config/env-file.ts'),
    ]);
    // Read like every other variable (environment, else .mam.env), but kept out of MamConfig: only this command may see it.
    const env = mergeEnv(readEnvFile(ctx.env, config.root, ctx.cwd), ctx.env);
    const token = env.MAM_DASHBOARD_TOKEN || undefined;
    const dashboard = await startDashboard({
      config,
      registry,
      log: await ctx.logger('mam-dashboard', { extraSecrets: token === undefined ? [] : [token] }),
      host: opts.host,
      port: opts.port,
      token,
      allowActions: opts.allowActions ?? false,
      trustedOrigins: opts.trustedOrigin ?? envOrigins(env.MAM_DASHBOARD_TRUSTED_ORIGINS),
      registryFlag: opts.registry === undefined ? undefined : config.registryDir,
    });
    // One plain line that scripts and tests wait for, whatever the log level.
    ctx.io.err.write(`mam dashboard on ${dashboard.url}\n`);
    // The token gate keeps strangers out; it cannot keep the wire private. That is TLS's job, in front.
    if (!isLoopbackHost(opts.host)) {
      ctx.warn(`${dashboard.url} is plain HTTP: the token and the session cookie cross the network readable; put a TLS proxy in front or use an SSH tunnel`);
    }
    await stopped;
    await dashboard.close();
    ctx.io.err.write('mam dashboard stopped\n');
  },
});

/** `MAM_DASHBOARD_TRUSTED_ORIGINS`, used when no --trusted-origin is given (a flag replaces its variable, as everywhere). */
function envOrigins(text: string | undefined): string[] {
  const list = parseOriginList(text);
  if ('problem' in list) throw new ConfigError(`MAM_DASHBOARD_TRUSTED_ORIGINS: ${list.problem}`);
  return list;
}
