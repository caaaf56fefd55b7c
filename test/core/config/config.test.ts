import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/core/config/config.ts';
import { parseEnvFile, readEnvFile } from '../../../src/core/config/env-file.ts';
import { findWorkspaceRoot } from '../../../src/core/config/workspace.ts';
import { ExitCode, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import { ConfigError } from '../../../src/core/errors.ts';
import { makeWorkspace, runBin } from '../../helpers/cli.ts';
import { tempDirForTest } from '../../helpers/temp-dir.ts';

/** A temp folder (symlinks resolved, so paths compare equal) with `.git`, holding no `.mam.env`. */
function workspace(): string {
  const root = realpathSync(tempDirForTest('mam-config-'));
  mkdirSync(path.join(root, '.git'));
  return root;
}

/** loadConfig with nothing of the machine's environment: only what the test passes. */
const configIn = (root: string, env: NodeJS.ProcessEnv = {}) => loadConfig({ MAM_REAL_ROOT: root, ...env }, root);

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('workspace root (contract §2)', () => {
  it('MAM_REAL_ROOT wins over WORKSPACE_ROOT and over markers', () => {
    const ws = workspace();
    const real = path.join(ws, 'real');
    const other = path.join(ws, 'other');
    expect(findWorkspaceRoot({ MAM_REAL_ROOT: real, WORKSPACE_ROOT: other }, ws)).toBe(real);
  });

  it('WORKSPACE_ROOT wins over the nearest marker', () => {
    const ws = workspace();
    expect(findWorkspaceRoot({ WORKSPACE_ROOT: path.join(ws, 'w') }, ws)).toBe(path.join(ws, 'w'));
  });

  it('a relative root is resolved against the current directory', () => {
    const ws = workspace();
    expect(findWorkspaceRoot({ MAM_REAL_ROOT: 'sub' }, ws)).toBe(path.join(ws, 'sub'));
  });

  it('else the nearest ancestor holding .agents or .git', () => {
    const ws = workspace();
    const inner = path.join(ws, 'a', 'b');
    const deep = path.join(inner, 'c', 'd');
    mkdirSync(deep, { recursive: true });
    expect(findWorkspaceRoot({}, deep)).toBe(ws);
    mkdirSync(path.join(inner, '.agents'));
    expect(findWorkspaceRoot({}, deep)).toBe(inner);
    // A git worktree has a `.git` file, not a folder: it counts too.
    writeFileSync(path.join(inner, 'c', '.git'), 'gitdir: elsewhere\n');
    expect(findWorkspaceRoot({}, deep)).toBe(path.join(inner, 'c'));
  });

  it('else the current directory', () => {
    const dir = realpathSync(tempDirForTest('mam-config-bare-'));
    const sub = path.join(dir, 'x', 'y');
    mkdirSync(sub, { recursive: true });
    // Only meaningful when no ancestor of the temp folder is itself a workspace.
    const ancestorRoot = findWorkspaceRoot({}, dir);
    if (ancestorRoot !== dir) return;
    expect(findWorkspaceRoot({}, sub)).toBe(sub);
    expect(loadConfig({}, sub).registryDir).toBe(path.join(sub, '.mam', 'jobs'));
  });
});

describe('defaults (contract §2, §7)', () => {
  it('every variable has its documented default', () => {
    const root = workspace();
    const config = configIn(root);
    // The environment it was read from, handed on to the processes a command starts.
    expect(config.env).toMatchObject({ MAM_REAL_ROOT: root });
    expect({ ...config, env: undefined }).toEqual({
      root,
      registryDir: path.join(root, '.mam', 'jobs'),
      logDir: path.join(root, '.mam', 'logs'),
      broker: {
        host: '127.0.0.1',
        port: 1883,
        tls: false,
        username: undefined,
        password: undefined,
        caCerts: undefined,
        certFile: undefined,
        keyFile: undefined,
        clientIdPrefix: 'mam',
        keepalive: 60,
      },
      topicRoot: 'python/mqtt/jobs',
      heartbeatSec: 30,
      heartbeatMisses: 4,
      ackTimeoutSec: 180,
      heartbeatDrainSec: 1,
      inboxMax: 10_000,
      dispatchSecret: undefined,
      fleetSecret: undefined,
      agentsRoot: undefined,
      logLevel: 'warn',
      debug: false,
    });
  });

  it('an empty value counts as unset', () => {
    const root = workspace();
    expect(configIn(root, { MQTT_PORT: '', MQTT_USERNAME: '' }).broker).toMatchObject({ port: 1883, username: undefined });
  });

  it('every variable is read and typed', () => {
    const root = workspace();
    const c = configIn(root, {
      MQTT_BROKER: 'mq.example',
      MQTT_PORT: '8883',
      MQTT_TLS: 'true',
      MQTT_USERNAME: 'u',
      MQTT_PASSWORD: 'p',
      MQTT_CA_CERTS: '/ca.pem',
      MQTT_CERTFILE: '/c.pem',
      MQTT_KEYFILE: '/k.pem',
      MQTT_CLIENT_ID_PREFIX: 'team-a',
      MQTT_KEEPALIVE: '30',
      MAM_TOPIC_ROOT: 'acme/jobs',
      MAM_HEARTBEAT_SEC: '2.5',
      MAM_HEARTBEAT_MISSES: '3',
      MAM_ACK_TIMEOUT_S: '20',
      MAM_HEARTBEAT_DRAIN_S: '0.5',
      MAM_DISPATCH_SECRET: 's3cret',
      MAM_FLEET_SECRET: 'fl33t',
      MAM_AGENTS_ROOT: 'acme/agents',
      MAM_INBOX_MAX: '64',
      MAM_REGISTRY_DIR: 'reg',
      MAM_LOG_DIR: '/var/mam-logs',
    });
    expect(c.broker).toEqual({
      host: 'mq.example',
      port: 8883,
      tls: true,
      username: 'u',
      password: 'p',
      caCerts: '/ca.pem',
      certFile: '/c.pem',
      keyFile: '/k.pem',
      clientIdPrefix: 'team-a',
      keepalive: 30,
    });
    expect(c).toMatchObject({ topicRoot: 'acme/jobs', heartbeatSec: 2.5, heartbeatMisses: 3, ackTimeoutSec: 20, heartbeatDrainSec: 0.5 });
    expect(c.dispatchSecret).toBe('s3cret');
    expect([c.fleetSecret, c.agentsRoot, c.inboxMax]).toEqual(['fl33t', 'acme/agents', 64]);
    // A relative folder is relative to the workspace root, not to wherever the command runs.
    expect(c.registryDir).toBe(path.join(root, 'reg'));
    expect(c.logDir).toBe('/var/mam-logs');
  });
});

describe('bad values are a ConfigError naming the variable', () => {
  it.each(['abc', '0', '70000', '-1', '1883.5'])('MQTT_PORT=%s', (port) => {
    const err = configError(() => configIn(workspace(), { MQTT_PORT: port }));
    expect(err.message).toMatch(/^MQTT_PORT=/);
    expect(err.message).toContain(JSON.stringify(port));
    expect(exitCodeOf(err)).toBe(ExitCode.failure);
  });

  it('a bad MQTT_PORT in .mam.env is named too', () => {
    const root = workspace();
    writeFileSync(path.join(root, '.mam.env'), 'MQTT_PORT=http\n');
    expect(configError(() => configIn(root)).message).toMatch(/^MQTT_PORT="http": /);
  });

  it.each(['a.b', 'a b', 'a/+/b', 'a/#', '/a', 'a/', 'a//b'])('MAM_TOPIC_ROOT=%j is refused', (topic) => {
    expect(configError(() => configIn(workspace(), { MAM_TOPIC_ROOT: topic })).message).toMatch(/^MAM_TOPIC_ROOT=/);
  });

  it.each([
    ['MQTT_TLS', 'maybe'],
    ['MAM_HEARTBEAT_SEC', 'soon'],
    ['MAM_HEARTBEAT_MISSES', '0'],
    ['MAM_LOG_LEVEL', 'loud'],
    ['MQTT_CLIENT_ID_PREFIX', 'a/b'],
    ['MAM_INBOX_MAX', '0'],
    ['MAM_AGENTS_ROOT', 'a//b'],
  ])('%s=%s', (key, value) => {
    expect(configError(() => configIn(workspace(), { [key]: value })).message).toMatch(new RegExp(`^${key}=`));
  });
});

describe('.mam.env (contract §7)', () => {
  it('<root>/.mam.env is read; variables already in the environment win', () => {
    const root = workspace();
    writeFileSync(path.join(root, '.mam.env'), 'MQTT_BROKER=from-file\nMQTT_PORT=1999\n');
    expect(configIn(root).broker).toMatchObject({ host: 'from-file', port: 1999 });
    expect(configIn(root, { MQTT_BROKER: 'from-env' }).broker).toMatchObject({ host: 'from-env', port: 1999 });
  });

  it('with MAM_ENV_FILE only that file is read', () => {
    const root = workspace();
    writeFileSync(path.join(root, '.mam.env'), 'MQTT_BROKER=root-file\n');
    const other = path.join(root, 'elsewhere.env');
    writeFileSync(other, 'MQTT_PORT=2001\n');
    expect(configIn(root, { MAM_ENV_FILE: other }).broker).toMatchObject({ host: '127.0.0.1', port: 2001 });
  });

  it('a missing MAM_ENV_FILE is skipped and no other file is searched', () => {
    const root = workspace();
    writeFileSync(path.join(root, '.mam.env'), 'MQTT_BROKER=root-file\n');
    const c = configIn(root, { MAM_ENV_FILE: path.join(root, 'missing.env') });
    expect(c.broker.host).toBe('127.0.0.1');
  });

  it('an unreadable MAM_ENV_FILE is a ConfigError "<path>: cannot read (EISDIR)"', () => {
    const root = workspace();
    const dir = path.join(root, 'a-folder');
    mkdirSync(dir);
    const err = configError(() => configIn(root, { MAM_ENV_FILE: dir }));
    expect(err.message).toBe(`${dir}: cannot read (EISDIR)`);
    expect(exitCodeOf(err)).toBe(ExitCode.failure);
  });

  it('an unreadable <root>/.mam.env is the same error', () => {
    const root = workspace();
    mkdirSync(path.join(root, '.mam.env'));
    expect(configError(() => configIn(root)).message).toBe(`${path.join(root, '.mam.env')}: cannot read (EISDIR)`);
  });

  it('readEnvFile returns nothing when there is no file', () => {
    expect(readEnvFile({}, workspace())).toEqual({});
  });
});

describe('parseEnvFile', () => {
  it('reads KEY=VALUE lines the way a shell user writes them', () => {
    const text = [
      '# a comment',
      '',
      '   # an indented comment',
      'PLAIN=value',
      'export EXPORTED=yes',
      'SPACED = around ',
      'DOUBLE="two words"',
      "SINGLE='single # quoted'",
      'HASH_QUOTED="a # not a comment"',
      'INLINE=value # a comment',
      'QUOTED_INLINE="quoted" # a comment',
      'EQUALS=a=b=c',
      'EMPTY=',
      'not a pair',
      '=nokey',
      '1BAD=key',
      'CRLF=ends\r',
      'LAST=wins',
      'LAST=really',
    ].join('\n');
    expect(parseEnvFile(text)).toEqual({
      PLAIN: 'value',
      EXPORTED: 'yes',
      SPACED: 'around',
      DOUBLE: 'two words',
      SINGLE: 'single # quoted',
      HASH_QUOTED: 'a # not a comment',
      INLINE: 'value',
      QUOTED_INLINE: 'quoted',
      EQUALS: 'a=b=c',
      EMPTY: '',
      CRLF: 'ends',
      LAST: 'really',
    });
  });

  it('a value from the file reaches the configuration unquoted', () => {
    const root = workspace();
    writeFileSync(path.join(root, '.mam.env'), 'export MQTT_PASSWORD="p@ss word" # prod\r\nMAM_TOPIC_ROOT=\'acme/jobs\'\r\n', { mode: 0o600 });
    const c = configIn(root);
    expect(c.broker.password).toBe('p@ss word');
    expect(c.topicRoot).toBe('acme/jobs');
  });
});

describe('CLI: an unreadable .mam.env', () => {
  it('mam-register prints one line "ERROR: <path>: cannot read (EISDIR)" and exits 1', () => {
    const ws = makeWorkspace();
    try {
      const dir = path.join(ws.root, 'env-dir');
      mkdirSync(dir);
      const r = runBin('mam-register', ['--brief', 'x'], ws, { env: { MAM_ENV_FILE: dir } });
      expect(r.stderr).toBe(`ERROR: ${dir}: cannot read (EISDIR)\n`);
      expect(r.stdout).toBe('');
      expect(r.code).toBe(1);
    } finally {
      ws.cleanup();
    }
  });
});

describe('env file corner cases a shell user expects', () => {
  it('resolves a relative MAM_ENV_FILE against the current directory, and an empty variable does not erase the file', () => {
    const root = tempDirForTest('mam-envfile-');
    const sub = path.join(root, 'sub');
    mkdirSync(sub);
    writeFileSync(path.join(sub, 'custom.env'), 'MQTT_BROKER=broker.internal\nMQTT_PORT=2883\n');
    const config = loadConfig({ MAM_REAL_ROOT: root, MAM_ENV_FILE: 'custom.env', MQTT_BROKER: '' }, sub);
    expect(config.broker.host).toBe('broker.internal');
    expect(config.broker.port).toBe(2883);
  });
});
