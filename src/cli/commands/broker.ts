import path from 'node:path';
import * as z from 'zod/mini';
import type { BrokerConfig } from '../../core/config/config.ts';
import { parseOptions } from '../options.ts';
import type { CommandSpec } from '../program.ts';

const portFlag = z.pipe(z.pipe(z.string().check(z.regex(/^\d+$/, 'expected a port number')), z.transform(Number)), z.int().check(z.maximum(65535, 'expected a port number up to 65535')));

const brokerOptions = z.object({
  port: z.optional(portFlag),
  host: z.optional(z.string().check(z.trim()).check(z.minLength(1, 'expected an address'))),
  wsPort: z.optional(portFlag),
  data: z.optional(z.string().check(z.minLength(1, 'expected a folder'))),
});
type BrokerOptions = z.infer<typeof brokerOptions>;

const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 1883;

const HELP = `
Where it listens: --host/--port when given; otherwise MQTT_BROKER/MQTT_PORT (environment or
.mam.env) when MQTT_BROKER is this machine (127.x, ::1, localhost), so that the other mam
commands find it with the same configuration; otherwise 127.0.0.1:1883. With MQTT_USERNAME and
MQTT_PASSWORD also configured for this machine, clients must present them.
Retained messages and the queues of persistent sessions are kept in --data and survive a
restart. Connections and refusals are logged (pino JSON on stderr) at MAM_LOG_LEVEL from the
environment, else info. SIGINT/SIGTERM stop it cleanly (exit 0); a port in use is exit 1.`;

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export interface ListenPlan {
  host: string;
  port: number;
  auth?: { username: string; password: string };
  warnings: string[];
}

/** Flags win; the configured broker is used only when it names this machine (see HELP). */
export function planListen(opts: Pick<BrokerOptions, 'host' | 'port'>, broker: BrokerConfig): ListenPlan {
  const local = isLoopback(broker.host);
  const warnings: string[] = [];
  const host = opts.host ?? (local ? broker.host : DEFAULT_HOST);
  const port = opts.port ?? (local ? broker.port : DEFAULT_PORT);
  const auth = local && broker.username && broker.password ? { username: broker.username, password: broker.password } : undefined;
  if (!local) warnings.push(`MQTT_BROKER=${broker.host} is not this machine: the other mam commands will not use this broker`);
  if (local && broker.tls) warnings.push('MQTT_TLS is set, but mam broker serves plain MQTT only: clients configured so will not connect');
  if (!isLoopback(host) && !auth) warnings.push(`listening on ${host} without TLS or passwords: anyone who can reach it can read and publish`);
  return { host, port, ...(auth ? { auth } : {}), warnings };
}

/**
 * Resolves on the first SIGINT/SIGTERM. Installed before the broker starts, so none is missed; the
 * handlers are one-shot, so a second signal during a slow close ends the process at once.
 */
function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}

const url = (scheme: string, host: string, port: number) => `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;

export const brokerCommand: CommandSpec = {
  name: 'broker',
  summary: 'run an embedded MQTT broker on this machine (127.0.0.1:1883 by default)',
  configure: (cmd) =>
    cmd
      .option('--port <port>', 'MQTT port; 0 picks a free one (default: see below)')
      .option('--host <address>', 'address to listen on (default: see below)')
      .option('--ws-port <port>', 'also serve MQTT over WebSocket on this port')
      .option('--data <dir>', 'persistence folder (default <root>/.mam/broker)')
      .addHelpText('after', HELP),
  async run(raw) {
    const opts = parseOptions(brokerOptions, raw);
    const stopped = stopSignal();
    const [{ loadConfig }, { createLogger }, { startEmbeddedBroker }] = await Promise.all([
      import('../../core/config/config.ts'),
      import('../../core/log.ts'),
      import('../../core/broker/embedded-broker.ts'),
    ]);
    const config = loadConfig();
    const plan = planListen(opts, config.broker);
    for (const w of plan.warnings) process.stderr.write(`warning: ${w}\n`);
    const dataDir = opts.data === undefined ? path.join(config.root, '.mam', 'broker') : path.resolve(opts.data);
    // A broker is a long-lived server: its connection log is the point, so info unless asked otherwise.
    const log = createLogger('mam-broker', process.env.MAM_LOG_LEVEL ? config.logLevel : 'info');
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
    process.stderr.write(`mam broker listening on ${url('mqtt', broker.host, broker.port)}${ws} (data ${dataDir}${who})\n`);
    const signal = await stopped;
    log.info({ signal }, 'stopping');
    await broker.close();
    process.stderr.write('mam broker stopped\n');
    return 0;
  },
};
