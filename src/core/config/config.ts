import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { mergeEnv, readEnvFile } from './env-file.ts';
import { findWorkspaceRoot } from './workspace.ts';

const flag = z
  .string()
  .trim()
  .toLowerCase()
  .refine((s) => ['', '0', '1', 'true', 'false', 'yes', 'no', 'on', 'off'].includes(s), 'expected true or false')
  .transform((s) => ['1', 'true', 'yes', 'on'].includes(s));

const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'expected a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const seconds = z
  .string()
  .trim()
  .regex(/^\d+(\.\d+)?$/, 'expected a number of seconds')
  .transform(Number)
  .pipe(z.number().positive());

const nonEmpty = z.string().trim().min(1);

/**
 * `MAM_TOPIC_ROOT`: NATS drops a connection whose topics hold `.` or spaces, and MQTT wildcards
 * would let one job's topic match another's, so the root is checked here once for every command.
 */
export const topicRoot = z
  .string()
  .trim()
  .min(1)
  .refine((s) => !/[.\s+#]/.test(s), 'must not contain ".", spaces, "+" or "#"')
  .refine((s) => !s.startsWith('/') && !s.endsWith('/') && !s.includes('//'), 'must not start or end with "/" or hold an empty level');

/** Section 7, one key per variable: the string form of the environment, validated and typed. */
const envSchema = z.object({
  MQTT_BROKER: nonEmpty.default('127.0.0.1'),
  MQTT_PORT: int(1, 65535).default(1883),
  MQTT_TLS: flag.default(false),
  MQTT_USERNAME: z.string().optional(),
  MQTT_PASSWORD: z.string().optional(),
  MQTT_CA_CERTS: nonEmpty.optional(),
  MQTT_CERTFILE: nonEmpty.optional(),
  MQTT_KEYFILE: nonEmpty.optional(),
  MQTT_CLIENT_ID_PREFIX: z.string().trim().regex(/^[A-Za-z0-9_-]{1,32}$/, 'expected 1-32 letters, digits, "_" or "-"').default('mam'),
  MQTT_KEEPALIVE: int(0, 65535).default(60),
  MAM_TOPIC_ROOT: topicRoot.default('python/mqtt/jobs'),
  MAM_HEARTBEAT_SEC: seconds.default(30),
  MAM_HEARTBEAT_MISSES: int(1, 1000).default(4),
  MAM_ACK_TIMEOUT_S: seconds.default(180),
  MAM_HEARTBEAT_DRAIN_S: seconds.default(1),
  MAM_DISPATCH_SECRET: z.string().min(1).optional(),
  MAM_REGISTRY_DIR: nonEmpty.optional(),
  MAM_LOG_DIR: nonEmpty.optional(),
  MAM_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('warn'),
  MAM_DEBUG: flag.default(false),
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
