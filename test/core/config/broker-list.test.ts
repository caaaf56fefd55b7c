import { mkdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import { loadConfig } from '../../../src/core/config/config.ts';
import { ConfigError } from '../../../src/core/errors.ts';
import { BrokerRefusedConnection } from '../../../src/core/mqtt/broker-errors.ts';
import { atServer, describeTarget, resolveBrokerTarget } from '../../../src/core/mqtt/broker-target.ts';
import { parseServerList } from '../../../src/core/mqtt/server-list.ts';
import { makeWorkspace, runBin } from '../../helpers/cli.ts';
import { tempDirForTest } from '../../helpers/temp-dir.ts';

// Broker lists (docs/cluster.md): MQTT_BROKER=h1:p1,h2:p2 or MQTT_SERVERS, parsed before any connection.

function workspace(): string {
  const root = realpathSync(tempDirForTest('mam-brokers-'));
  mkdirSync(path.join(root, '.git'));
  return root;
}
const configIn = (env: NodeJS.ProcessEnv) => {
  const root = workspace();
  return loadConfig({ MAM_REAL_ROOT: root, ...env }, root);
};

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('a broker list in either spelling', () => {
  it.each(['MQTT_BROKER', 'MQTT_SERVERS'])('%s=h1:p1,h2:p2,h3 lists every server in order; the first is host:port', (key) => {
    const { broker } = configIn({ [key]: 'mq1.example:1884, mq2.example:1885,mq3.example', MQTT_PORT: '2883' });
    expect(broker.host).toBe('mq1.example');
    expect(broker.port).toBe(1884);
    // An entry without a port takes MQTT_PORT.
    expect(broker.servers).toEqual([
      { host: 'mq1.example', port: 1884 },
      { host: 'mq2.example', port: 1885 },
      { host: 'mq3.example', port: 2883 },
    ]);
  });

  it('one server is no list: host and port as before, no servers', () => {
    for (const [env, port] of [
      [{ MQTT_BROKER: 'mq.example:1999' }, 1999],
      [{ MQTT_BROKER: 'mq.example', MQTT_PORT: '1999' }, 1999],
      [{ MQTT_SERVERS: 'mq.example' }, 1883],
    ] as const) {
      const { broker } = configIn(env);
      expect(broker).toMatchObject({ host: 'mq.example', port });
      expect('servers' in broker).toBe(false);
    }
  });

  it('IPv6 entries are bracketed when they carry a port, bare when they do not', () => {
    expect(configIn({ MQTT_SERVERS: '[::1]:1884,fd00::5' }).broker.servers).toEqual([
      { host: '::1', port: 1884 },
      { host: 'fd00::5', port: 1883 },
    ]);
  });

  it('with both, MQTT_SERVERS is the list and MQTT_BROKER must name one of its servers', () => {
    // How an agent's environment arrives: MQTT_BROKER/MQTT_PORT name the first server, the list comes along.
    const { broker } = configIn({ MQTT_SERVERS: 'a:1,b:2', MQTT_BROKER: 'b', MQTT_PORT: '2' });
    expect(broker.servers).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 2 },
    ]);
    const err = configError(() => configIn({ MQTT_SERVERS: 'a:1,b:2', MQTT_BROKER: 'c:3' }));
    expect(err.message).toMatch(/^MQTT_BROKER="c:3": c:3 is not one of MQTT_SERVERS/);
    expect(err.message).not.toContain('\n');
  });

  it('the target fails over along the list; a one-shot try goes to one server, wrapping', () => {
    const target = resolveBrokerTarget(configIn({ MQTT_SERVERS: 'a:1,b:2,c:3' }).broker);
    expect(describeTarget(target)).toBe('mqtt://a:1,b:2,c:3');
    expect([0, 1, 2, 3].map((i) => describeTarget(atServer(target, i)))).toEqual(['mqtt://a:1', 'mqtt://b:2', 'mqtt://c:3', 'mqtt://a:1']);
  });

  it("a job's broker block naming a configured server keeps the whole list, that server first", () => {
    const config = configIn({ MQTT_SERVERS: 'a:1,b:2,c:3' }).broker;
    expect(resolveBrokerTarget(config, { broker: { host: 'b', port: 2 } } as never).servers).toEqual([
      { host: 'b', port: 2 },
      { host: 'a', port: 1 },
      { host: 'c', port: 3 },
    ]);
    // A broker outside the list: the job lives there, and only there.
    expect(resolveBrokerTarget(config, { broker: { host: 'elsewhere', port: 9 } } as never).servers).toEqual([{ host: 'elsewhere', port: 9 }]);
  });
});

describe('a refused CONNACK along a list', () => {
  it('is final (contract §3), except 3 "server unavailable": one node cannot serve, the next may', () => {
    expect([1, 2, 3, 4, 5].map((code) => new BrokerRefusedConnection('mqtt://a:1', 'u', code).transient)).toEqual([false, false, true, false, false]);
  });
});

describe('a bad list is a ConfigError naming the variable, one line (exit 1)', () => {
  it.each([
    ['MQTT_BROKER', 'h1,,h2', /empty entry/],
    ['MQTT_SERVERS', 'h1,', /empty entry/],
    ['MQTT_SERVERS', ' ', /expected a host name/],
    ['MQTT_BROKER', 'mqtt://h1:1883', /no scheme/],
    ['MQTT_SERVERS', 'user@h1:1883', /no scheme, path or user/],
    ['MQTT_SERVERS', 'h1:0,h2:1883', /port from 1 to 65535/],
    ['MQTT_BROKER', 'h1:70000', /port from 1 to 65535/],
    ['MQTT_SERVERS', 'h1:abc', /port from 1 to 65535/],
    ['MQTT_SERVERS', 'h1:1883,h1:1883', /listed twice/],
    ['MQTT_SERVERS', '[not-v6]:1883', /IPv6/],
    ['MQTT_BROKER', 'h1 h2', /expected host/],
  ])('%s=%j', (key, value, why) => {
    const err = configError(() => configIn({ [key]: value }));
    expect(err.message).toMatch(new RegExp(`^${key}=${JSON.stringify(value).replace(/[[\]\\^$.|?*+()]/g, '\\$&')}: `));
    expect(err.message).toMatch(why);
    expect(err.message).not.toContain('\n');
    expect(exitCodeOf(err)).toBe(ExitCode.failure);
  });

  it('parseServerList says why, and never throws', () => {
    expect(parseServerList('a:1,b')).toEqual([{ host: 'a', port: 1 }, { host: 'b' }]);
    expect(parseServerList('a:99999')).toBe('"a:99999": expected a port from 1 to 65535 after ":"');
  });

  it.each(['mam-register', 'mam-publish', 'mam-subscribe'])('%s: one ERROR line, nothing on stdout, exit 1, before any connection', (bin) => {
    const ws = makeWorkspace({ MQTT_SERVERS: '127.0.0.1:1,mqtt://x' });
    try {
      const args = bin === 'mam-register' ? ['--brief', 'x'] : bin === 'mam-publish' ? ['--job', 'a1b2c3d4', '--event', 'started'] : ['--job', 'a1b2c3d4'];
      const r = runBin(bin, args, ws);
      expect(r.stderr).toMatch(/^ERROR: MQTT_SERVERS="127\.0\.0\.1:1,mqtt:\/\/x": "mqtt:\/\/x": expected host, host:port or \[IPv6\]:port[^\n]*\n$/);
      expect(r.stdout).toBe('');
      expect(r.code).toBe(1);
    } finally {
      ws.cleanup();
    }
  });
});
