import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, copyFileSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_TLS } from './brokers.ts';
import { HOST, requireBinary, startServer, type ServerTestBroker } from './server-process.ts';

/**
 * The production broker configurations of docker/, started as real servers for the tests: the
 * same files, with only what cannot be the same on a test machine substituted (ports, folders,
 * certificates, the log destination). A setting the substitution expects but does not find is an
 * error, so the configs and the tests cannot drift apart unnoticed.
 */
export const DOCKER_DIR = fileURLToPath(new URL('../../docker/', import.meta.url));
export const NATS_CONF = join(DOCKER_DIR, 'nats/nats.conf');
export const MOSQUITTO_CONF = join(DOCKER_DIR, 'mosquitto/mosquitto.conf');
export const MOSQUITTO_ACL = join(DOCKER_DIR, 'mosquitto/acl');
export const MAKE_PASSWD = join(DOCKER_DIR, 'mosquitto/make-passwd.sh');

export interface Credentials {
  username: string;
  password: string;
}
/** The two MAM users of both configs, with passwords made up for this server. */
export interface MamUsers {
  agent: Credentials;
  observer: Credentials;
}

/**
 * A letter, then hex: nats-server parses a `$VAR`'s value as config syntax, so a value that looks
 * like a number stops it, and one with `,` `;` `}` is silently cut short (docker/README.md).
 */
export function makePassword(): string {
  return `p${randomBytes(16).toString('hex')}`;
}

function makeUsers(): MamUsers {
  return { agent: { username: 'mam_agent', password: makePassword() }, observer: { username: 'mam_observer', password: makePassword() } };
}

// ---- NATS ----------------------------------------------------------------------------------

/**
 * Rewrites `key: value` settings of a nats-server config by their block path (`mqtt.listen`):
 * a string replaces the value, null drops the line. Blocks are tracked by their braces; the file
 * keeps one setting per line (see its header), which is all this needs to understand.
 */
export function rewriteNatsConf(text: string, settings: Record<string, string | null>): string {
  const stack: string[] = [];
  const seen = new Set<string>();
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const code = line.replace(/#.*$/, '');
    const setting = /^(\s*)([A-Za-z_]+)\s*[:=]?\s*([^{\s].*)$/.exec(code);
    const path = setting ? [...stack.filter(Boolean), setting[2]].join('.') : undefined;
    if (path !== undefined && path in settings) {
      seen.add(path);
      const value = settings[path];
      if (value !== null) out.push(`${setting![1]}${setting![2]}: ${value}`);
    } else {
      out.push(line);
    }
    const opener = /^\s*([A-Za-z_]+)?\s*[:=]?\s*\{\s*$/.exec(code);
    if (opener) stack.push(opener[1] ?? '');
    else if (/^\s*\}/.test(code) && !code.includes('{')) stack.pop();
  }
  const missing = Object.keys(settings).filter((k) => !seen.has(k));
  if (missing.length > 0) throw new Error(`nats.conf: expected settings not found: ${missing.join(', ')}`);
  return out.join('\n');
}

export interface DockerNatsBroker extends ServerTestBroker {
  clientPort: number;
  /** MQTT over WebSocket: `ws://127.0.0.1:<port>/mqtt`. */
  wsUrl: string;
  users: MamUsers;
  /** The system account's password (core NATS port only). */
  sysPassword: string;
}

/** nats-server with docker/nats/nats.conf; the passwords go into its environment as `$VAR`s. */
export async function startDockerNats(): Promise<DockerNatsBroker> {
  const bin = requireBinary('nats-server');
  const users = makeUsers();
  const sysPassword = makePassword();
  const env = { MAM_AGENT_PASSWORD: users.agent.password, MAM_OBSERVER_PASSWORD: users.observer.password, MAM_SYS_PASSWORD: sysPassword };
  const source = readFileSync(NATS_CONF, 'utf8');
  return startServer(
    { name: 'nats-server', bin, scheme: 'mqtt', portCount: 3, readyLog: /Server is ready/, env },
    (dir, [mqttPort, clientPort, wsPort]) =>
      `${rewriteNatsConf(source, {
        listen: `"${HOST}:${clientPort}"`,
        http: null, // monitoring is for the compose healthcheck; tests do not need another port
        'jetstream.store_dir': `"${join(dir, 'jetstream')}"`,
        'mqtt.listen': `"${HOST}:${mqttPort}"`,
        'websocket.listen': `"${HOST}:${wsPort}"`,
      })}\nlog_file: "${join(dir, 'server.log')}"\n`,
    ([, clientPort, wsPort]) => ({ clientPort: clientPort ?? 0, wsUrl: `ws://${HOST}:${wsPort}/mqtt`, users, sysPassword }),
  );
}

// ---- Mosquitto -----------------------------------------------------------------------------

/**
 * Replaces whole mosquitto.conf directives (`listener 8883` → `listener 41234 127.0.0.1`). Every
 * directive named must occur exactly once: the file has one listener.
 */
export function rewriteMosquittoConf(text: string, directives: Record<string, string>): string {
  const counts = new Map<string, number>();
  const out = text.split('\n').map((line) => {
    const name = /^([a-z_]+)(\s|$)/.exec(line)?.[1];
    if (name === undefined || !(name in directives)) return line;
    counts.set(name, (counts.get(name) ?? 0) + 1);
    return `${name} ${directives[name]}`;
  });
  const wrong = Object.keys(directives).filter((k) => counts.get(k) !== 1);
  if (wrong.length > 0) throw new Error(`mosquitto.conf: expected each once: ${wrong.join(', ')}`);
  return out.join('\n');
}

export interface DockerMosquittoOptions {
  /** Sets `require_certificate` (mTLS); the config's own value is false. */
  requireClientCert?: boolean;
  /**
   * Test-only users (e.g. one that may read `#`, to prove that a message was not delivered),
   * appended to the password file and the ACL after the production entries, which stay untouched.
   */
  extraUsers?: Array<Credentials & { acl: string[] }>;
}

export interface DockerMosquittoBroker extends ServerTestBroker {
  caFile: string;
  users: MamUsers;
}

/** mosquitto with docker/mosquitto/{mosquitto.conf,acl,make-passwd.sh} and the test certificates. */
export async function startDockerMosquitto(opts: DockerMosquittoOptions = {}): Promise<DockerMosquittoBroker> {
  const bin = requireBinary('mosquitto');
  const users = makeUsers();
  const source = readFileSync(MOSQUITTO_CONF, 'utf8');
  return startServer(
    { name: 'mosquitto', bin, scheme: 'mqtts', portCount: 1, readyLog: /mosquitto version \S+ running/ },
    (dir, [port]) => {
      const passwd = join(dir, 'passwd');
      const acl = join(dir, 'acl');
      // The same script the container runs at start, with the same variables.
      const env = { ...process.env, MAM_AGENT_PASSWORD: users.agent.password, MAM_OBSERVER_PASSWORD: users.observer.password };
      execFileSync('sh', [MAKE_PASSWD, passwd], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      copyFileSync(MOSQUITTO_ACL, acl);
      for (const u of opts.extraUsers ?? []) {
        execFileSync('mosquitto_passwd', ['-b', passwd, u.username, u.password], { stdio: ['ignore', 'ignore', 'pipe'] });
        appendFileSync(acl, `\n# test only\nuser ${u.username}\n${u.acl.join('\n')}\n`);
      }
      const conf = rewriteMosquittoConf(source, {
        listener: `${port} ${HOST}`,
        persistence_location: `${dir}/`,
        log_dest: `file ${join(dir, 'server.log')}`,
        password_file: passwd,
        acl_file: acl,
        certfile: TEST_TLS.serverCert,
        keyfile: TEST_TLS.serverKey,
        cafile: TEST_TLS.ca,
        require_certificate: opts.requireClientCert ? 'true' : 'false',
      });
      // As root, mosquitto would switch to user "mosquitto", which cannot read our 0700 folder.
      return `${process.getuid?.() === 0 ? `user ${userInfo().username}\n` : ''}${conf}\n`;
    },
    () => ({ caFile: TEST_TLS.ca, users }),
  );
}
