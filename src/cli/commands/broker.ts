import path from 'node:path';
import * as z from 'zod/mini';

import { nonEmptyFlag, portFlag } from '../flags.ts';
import { parseOptions } from '../options.ts';
import { defineCommand } from '../program.ts';

const brokerOptions = z.object({
  port: z.optional(portFlag),
  host: z.optional(nonEmptyFlag),
  wsPort: z.optional(portFlag),
  data: z.optional(z.string().check(z.minLength(1, 'expected a folder'))),
});

const HELP = `
Where it listens: --host/--port when given; otherwise MQTT_BROKER/MQTT_PORT (environment or
.mam.env) when MQTT_BROKER is this machine (127.x, ::1, localhost), so that the other mam
commands find it with the same configuration; otherwise 127.0.0.1:1883. With MQTT_USERNAME and
MQTT_PASSWORD also configured for this machine, clients must present them.
Retained messages and the queues of persistent sessions are kept in --data and survive a
restart. Connections and refusals are logged (pino JSON on stderr) at MAM_LOG_LEVEL from the
environment, else info. SIGINT/SIGTERM stop it cleanly (exit 0); a port in use is exit 1.`;

const url = (scheme: string, host: string, port: number) => `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;

export const brokerCommand = defineCommand({
  name: 'broker',
  summary: 'run an embedded MQTT broker on this machine (127.0.0.1:1883 by default)',
  configure: (cmd) =>
    cmd
      .option('--port <port>', 'MQTT port; 0 picks a free one (default: see below)')
      .option('--host <address>', 'address to listen on (default: see below)')
      .option('--ws-port <port>', 'also serve MQTT over WebSocket on this port')
      .option('--data <dir>', 'persistence folder (default <root>/.mam/broker)')
      .addHelpText('after', HELP),
  parse: (raw) => parseOptions(brokerOptions, raw),
  async run(opts, ctx) {
    // Installed before the broker starts, so that no signal is missed.
    const stopped = ctx.stopSignal();
    const [{ startEmbeddedBroker }, { planListen }] = await Promise.all([
      import('../../core/broker/embedded-broker.ts'),
      import('../../core/broker/listen-plan.ts'),
    ]);
    const config = ctx.config();
    const plan = planListen(opts, config.broker);
    for (const w of plan.warnings) ctx.warn(w);
    const dataDir = opts.data === undefined ? path.join(config.root, '.mam', 'broker') : path.resolve(ctx.cwd, opts.data);
    // A broker is a long-lived server: its connection log is the point, so info unless asked otherwise.
    const log = await ctx.logger('mam-broker', { level: ctx.env.MAM_LOG_LEVEL ? config.logLevel : 'info' });
    const broker = await startEmbeddedBroker({
      host: plan.host,
      port: plan.port,
      ...(opts.wsPort === undefined ? {} : { wsPort: opts.wsPort }),
      dataDir,
      logger: log,
      ...(plan.auth ? { auth: plan.auth } : {}),
    });
    const ws = broker.wsPort === undefined ? '' : ` and ${url('ws', broker.host, broker.wsPort)}`;
    const who = plan.auth ? `, user ${plan.auth.username}` : '';
    // One plain line that scripts and tests wait for, whatever the log level.
    ctx.io.err.write(`mam broker listening on ${url('mqtt', broker.host, broker.port)}${ws} (data ${dataDir}${who})\n`);
    const signal = await stopped;
    log.info({ signal }, 'stopping');
    await broker.close();
    ctx.io.err.write('mam broker stopped\n');
  },
});
