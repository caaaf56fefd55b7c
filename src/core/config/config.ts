import path from 'node:path';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import { ConfigError } from '../errors.ts';
import { type BrokerServer, type WrittenServer, formatServer, parseServerList, sameServer, withPorts } from '../mqtt/server-list.ts';
import { DEFAULT_INBOX_LIMIT } from '../subscriber/message-inbox.ts';
import { mergeEnv, readEnvFile } from './env-file.ts';
import { secondsText, switchText, wholeNumberText } from './text-values.ts';
import { findWorkspaceRoot } from './workspace.ts';

const nonEmpty = z.string().check(z.trim()).check(z.minLength(1));

/**
 * `MAM_TOPIC_ROOT`: NATS drops a connection whose topics hold `.` or spaces, and MQTT wildcards
 * would let one job's topic match another's, so the root is checked here once for every command.
 */
export const topicRoot = z
  .string()
  .check(z.trim())
  .check(z.minLength(1))
  .check(z.refine((s) => !/[.\s+#]/.test(s), 'must not contain ".", spaces, "+" or "#"'))
  .check(z.refine((s) => !s.startsWith('/') && !s.endsWith('/') && !s.includes('//'), 'must not start or end with "/" or hold an empty level'));

/**
 * `MQTT_BROKER` and `MQTT_SERVERS`: one broker or a comma-separated list (`h1:1883,h2:1883,h3`),
 * ports resolved later against `MQTT_PORT`. Checked here so that a typo is a one-line error before
 * any connection, not a DNS failure after three tries.
 */
const serverListText = z.pipe(
  z.string(),
  z.transform((text: string, ctx): WrittenServer[] => {
    const list = parseServerList(text);
    if (typeof list !== 'string') return list;
    ctx.issues.push({ code: 'custom', message: list, input: text });
    return z.NEVER;
  }),
);

/** Section 7, one key per variable: the string form of the environment, validated and typed. */
const envSchema = z.object({
  MQTT_BROKER: z._default(serverListText, [{ host: '127.0.0.1' }]),
  MQTT_SERVERS: z.optional(serverListText),
  MQTT_PORT: z._default(wholeNumberText(1, 65535), 1883),
  MQTT_TLS: z._default(switchText, false),
  MQTT_USERNAME: z.optional(z.string()),
  MQTT_PASSWORD: z.optional(z.string()),
  MQTT_CA_CERTS: z.optional(nonEmpty),
  MQTT_CERTFILE: z.optional(nonEmpty),
  MQTT_KEYFILE: z.optional(nonEmpty),
  MQTT_CLIENT_ID_PREFIX: z._default(
    z
      .string()
      .check(z.trim())
      .check(z.regex(/^[A-Za-z0-9_-]{1,32}$/, 'expected 1-32 letters, digits, "_" or "-"')),
    'mam',
  ),
  MQTT_KEEPALIVE: z._default(wholeNumberText(0, 65535), 60),
  MAM_TOPIC_ROOT: z._default(topicRoot, 'python/mqtt/jobs'),
  MAM_HEARTBEAT_SEC: z._default(secondsText(), 30),
  MAM_HEARTBEAT_MISSES: z._default(wholeNumberText(1, 1000), 4),
  MAM_ACK_TIMEOUT_S: z._default(secondsText(), 180),
  MAM_HEARTBEAT_DRAIN_S: z._default(secondsText(), 1),
  // Messages a watch holds before it stops reading the socket (src/core/subscriber/message-inbox.ts).
  MAM_INBOX_MAX: z._default(wholeNumberText(1, 10_000_000), DEFAULT_INBOX_LIMIT),
  MAM_DISPATCH_SECRET: z.optional(z.string().check(z.minLength(1))),
  // Fleet coordination (docs/coordination.md): signs presence and turn bids; the agents' topic root.
  MAM_FLEET_SECRET: z.optional(z.string().check(z.minLength(1))),
  MAM_AGENTS_ROOT: z.optional(topicRoot),
  // The fleet's names for the @mention rules: `ada=Ada,Ada Lovelace;bob=Bob` (src/core/fleet/mention-rules.ts).
  MAM_AGENT_ALIASES: z.optional(z.string()),
  // Read here only so that it is scrubbed like the other secrets; `mam dashboard` checks its length.
  MAM_DASHBOARD_TOKEN: z.optional(z.string()),
  MAM_REGISTRY_DIR: z.optional(nonEmpty),
  MAM_LOG_DIR: z.optional(nonEmpty),
  MAM_LOG_LEVEL: z._default(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'warn'),
  MAM_DEBUG: z._default(switchText, false),
});

export interface BrokerConfig {
  /** The first server: the one `mam broker`, an agent's environment and the embedded broker of `mam delegate` name. */
  host: string;
  port: number;
  /**
   * Set only for a list of two or more: every server in order, the first being host:port. The
   * clients fail over along it (docs/cluster.md); absent means host:port alone.
   */
  servers?: BrokerServer[] | undefined;
  tls: boolean;
  username?: string | undefined;
  password?: string | undefined;
  caCerts?: string | undefined;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  clientIdPrefix: string;
  keepalive: number;
}

export interface MamConfig {
  /**
   * The environment this configuration was read from (without `.mam.env`, which every process reads
   * itself): what the processes MAM starts for a command inherit. Unset: this process's.
   */
  env?: NodeJS.ProcessEnv | undefined;
  root: string;
  registryDir: string;
  logDir: string;
  broker: BrokerConfig;
  topicRoot: string;
  heartbeatSec: number;
  heartbeatMisses: number;
  ackTimeoutSec: number;
  heartbeatDrainSec: number;
  /** `MAM_INBOX_MAX`: the most messages a watch holds in memory before it stops reading. */
  inboxMax: number;
  dispatchSecret?: string | undefined;
  fleetSecret?: string | undefined;
  /** `MAM_DASHBOARD_TOKEN`: the dashboard's login (src/cli/commands/dashboard.ts). */
  dashboardToken?: string | undefined;
  /** `MAM_AGENTS_ROOT`, else the topic root's sibling `agents` (src/core/fleet/fleet-names.ts). */
  agentsRoot?: string | undefined;
  /** `MAM_AGENT_ALIASES`: agent names and their display names, for `mam mentions`. */
  agentAliases?: string | undefined;
  logLevel: string;
  debug: boolean;
}

/** Treats an empty value (`MQTT_USERNAME=`) as unset, as the Python toolkit did. */
function dropEmpty(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') out[key] = v;
  }
  return out;
}

/**
 * The broker list: `MQTT_SERVERS` when set, else `MQTT_BROKER`. With both, every server that
 * `MQTT_BROKER` names must be in `MQTT_SERVERS`: that is how an agent's environment arrives (the
 * launcher sets `MQTT_BROKER`/`MQTT_PORT` to the first server and the list comes along), while a
 * `MQTT_BROKER` pointing elsewhere is a mistake that must not silently lose to the list.
 */
function brokerServers(broker: WrittenServer[], list: WrittenServer[] | undefined, defaultPort: number, brokerText: string | undefined): BrokerServer[] {
  const named = withPorts(broker, defaultPort);
  if (list === undefined) return named;
  const servers = withPorts(list, defaultPort);
  const stray = brokerText?.trim() ? named.find((s) => !servers.some((t) => sameServer(s, t))) : undefined;
  if (stray) {
    throw new ConfigError(
      `MQTT_BROKER=${JSON.stringify(brokerText)}: ${formatServer(stray)} is not one of MQTT_SERVERS (unset MQTT_BROKER, or name a server of the list)`,
    );
  }
  return servers;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): MamConfig {
  const root = findWorkspaceRoot(env, cwd);
  const merged = mergeEnv(readEnvFile(env, root, cwd), env);
  const parsed = envSchema.safeParse(dropEmpty(merged));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0]);
    throw new ConfigError(`${key}=${JSON.stringify(merged[key])}: ${issue.message}`);
  }
  const v = parsed.data;
  const servers = brokerServers(v.MQTT_BROKER, v.MQTT_SERVERS, v.MQTT_PORT, merged.MQTT_BROKER);
  const first = servers[0]!;
  const mam = path.join(root, '.mam');
  return {
    env,
    root,
    registryDir: v.MAM_REGISTRY_DIR ? path.resolve(root, v.MAM_REGISTRY_DIR) : path.join(mam, 'jobs'),
    logDir: v.MAM_LOG_DIR ? path.resolve(root, v.MAM_LOG_DIR) : path.join(mam, 'logs'),
    broker: {
      host: first.host,
      port: first.port,
      ...(servers.length > 1 ? { servers } : {}),
      tls: v.MQTT_TLS,
      username: v.MQTT_USERNAME,
      password: v.MQTT_PASSWORD,
      caCerts: v.MQTT_CA_CERTS,
      certFile: v.MQTT_CERTFILE,
      keyFile: v.MQTT_KEYFILE,
      clientIdPrefix: v.MQTT_CLIENT_ID_PREFIX,
      keepalive: v.MQTT_KEEPALIVE,
    },
    topicRoot: v.MAM_TOPIC_ROOT,
    heartbeatSec: v.MAM_HEARTBEAT_SEC,
    heartbeatMisses: v.MAM_HEARTBEAT_MISSES,
    ackTimeoutSec: v.MAM_ACK_TIMEOUT_S,
    heartbeatDrainSec: v.MAM_HEARTBEAT_DRAIN_S,
    inboxMax: v.MAM_INBOX_MAX,
    dispatchSecret: v.MAM_DISPATCH_SECRET,
    fleetSecret: v.MAM_FLEET_SECRET,
    dashboardToken: v.MAM_DASHBOARD_TOKEN,
    agentsRoot: v.MAM_AGENTS_ROOT,
    agentAliases: v.MAM_AGENT_ALIASES,
    logLevel: v.MAM_LOG_LEVEL,
    debug: v.MAM_DEBUG,
  };
}

/**
 * Every secret the configuration holds, for the scrubbers (contract §3 `detail`, error lines): one
 * list, so a secret added to the configuration is added here and nowhere else.
 */
export function configSecrets(config: MamConfig): string[] {
  return [config.broker.password, config.dispatchSecret, config.fleetSecret, config.dashboardToken].filter((s): s is string => !!s);
}
