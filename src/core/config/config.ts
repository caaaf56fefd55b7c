import path from 'node:path';
import * as z from 'zod/mini';
import '../zod-messages.ts';
import { ConfigError } from '../errors.ts';
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

/** Section 7, one key per variable: the string form of the environment, validated and typed. */
const envSchema = z.object({
  MQTT_BROKER: z._default(nonEmpty, '127.0.0.1'),
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
  MAM_DISPATCH_SECRET: z.optional(z.string().check(z.minLength(1))),
  MAM_REGISTRY_DIR: z.optional(nonEmpty),
  MAM_LOG_DIR: z.optional(nonEmpty),
  MAM_LOG_LEVEL: z._default(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'warn'),
  MAM_DEBUG: z._default(switchText, false),
});

export interface BrokerConfig {
  host: string;
  port: number;
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
  root: string;
  registryDir: string;
  logDir: string;
  broker: BrokerConfig;
  topicRoot: string;
  heartbeatSec: number;
  heartbeatMisses: number;
  ackTimeoutSec: number;
  heartbeatDrainSec: number;
  dispatchSecret?: string | undefined;
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
  const mam = path.join(root, '.mam');
  return {
    root,
    registryDir: v.MAM_REGISTRY_DIR ? path.resolve(root, v.MAM_REGISTRY_DIR) : path.join(mam, 'jobs'),
    logDir: v.MAM_LOG_DIR ? path.resolve(root, v.MAM_LOG_DIR) : path.join(mam, 'logs'),
    broker: {
      host: v.MQTT_BROKER,
      port: v.MQTT_PORT,
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
    dispatchSecret: v.MAM_DISPATCH_SECRET,
    logLevel: v.MAM_LOG_LEVEL,
    debug: v.MAM_DEBUG,
  };
}
