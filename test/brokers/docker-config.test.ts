import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { brokerAvailability, describeWithBroker } from '../helpers/brokers.ts';
import { DOCKER_DIR, MAKE_PASSWD, MOSQUITTO_CONF, NATS_CONF, rewriteMosquittoConf, rewriteNatsConf } from '../helpers/docker-brokers.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';

// The files of docker/ themselves: what compose mounts exists, no secret is written down, and the
// substitutions the tests make touch only what they mean to.

const compose = readFileSync(path.join(DOCKER_DIR, 'docker-compose.yaml'), 'utf8');
const PASSWORDS = { MAM_AGENT_PASSWORD: 'a', MAM_OBSERVER_PASSWORD: 'o', MAM_SYS_PASSWORD: 's' };

describe('docker/', () => {
  it('compose runs nats:2.12.12-alpine (pinned: earlier releases let retained and QoS replays bypass deny rules) by default and Mosquitto under the "mosquitto" profile', () => {
    expect(compose).toMatch(/^ {2}nats:\n {4}image: nats:2\.12\.12-alpine$/m);
    expect(compose).toMatch(/^ {2}mosquitto:\n {4}profiles: \["mosquitto"\]\n {4}image: eclipse-mosquitto:2$/m);
  });

  it("every file compose mounts from the repository exists (certificates and .env are the operator's)", () => {
    const mounts = [...compose.matchAll(/^\s+- \.\/([^:]+):/gm)].map((m) => m[1]!);
    expect(mounts.length).toBeGreaterThanOrEqual(4);
    for (const m of mounts.filter((m) => m !== 'mosquitto/certs')) expect(existsSync(path.join(DOCKER_DIR, m)), m).toBe(true);
    expect(readFileSync(path.join(DOCKER_DIR, '.gitignore'), 'utf8')).toMatch(/^\.env$/m);
  });

  it('no password is written in a config: NATS reads $VARs, compose requires them, Mosquitto builds its file', () => {
    const nats = readFileSync(NATS_CONF, 'utf8');
    const values = [...nats.matchAll(/\bpassword:\s*([^\s,}]+)/g)].map((m) => m[1]);
    expect(values).toEqual(['$MAM_AGENT_PASSWORD', '$MAM_OBSERVER_PASSWORD', '$MAM_SYS_PASSWORD']);
    for (const v of Object.keys(PASSWORDS)) expect(compose).toContain(`${v}: \${${v}:?`);
    expect(readFileSync(MOSQUITTO_CONF, 'utf8')).toMatch(/^allow_anonymous false$/m);
  });

  it('make-passwd.sh refuses to run without the passwords', () => {
    const r = spawnSync('sh', [MAKE_PASSWD, path.join(tempDirForTest(), 'passwd')], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('MAM_AGENT_PASSWORD is not set');
  });
});

describe('config rewriting for the test servers', () => {
  it('nats: settings are found by block, other lines are kept verbatim', () => {
    const text = 'listen: "0.0.0.0:4222"\nmqtt {\n  listen: "0.0.0.0:1883" # port\n  ack_wait: "30s"\n}\nhttp: 8222\n';
    expect(rewriteNatsConf(text, { listen: '"A"', 'mqtt.listen': '"B"', http: null })).toBe('listen: "A"\nmqtt {\n  listen: "B"\n  ack_wait: "30s"\n}\n');
    expect(() => rewriteNatsConf(text, { 'websocket.listen': '"C"' })).toThrow('nats.conf: expected settings not found: websocket.listen');
  });

  it('nats: the real file has every setting the harness substitutes', () => {
    const out = rewriteNatsConf(readFileSync(NATS_CONF, 'utf8'), {
      listen: '"L"',
      http: null,
      'jetstream.store_dir': '"S"',
      'mqtt.listen': '"M"',
      'websocket.listen': '"W"',
    });
    expect(out).not.toMatch(/0\.0\.0\.0|\/data\/|8222/);
  });

  it('mosquitto: whole directives are replaced; each must occur exactly once', () => {
    const text = '# listener 1\nlistener 8883\nrequire_certificate false\n';
    expect(rewriteMosquittoConf(text, { listener: '1234 127.0.0.1' })).toBe('# listener 1\nlistener 1234 127.0.0.1\nrequire_certificate false\n');
    expect(() => rewriteMosquittoConf(text, { cafile: 'x' })).toThrow('mosquitto.conf: expected each once: cafile');
  });
});

describeWithBroker('nats-server', 'docker/nats/nats.conf as nats-server reads it', () => {
  const check = (env: NodeJS.ProcessEnv) =>
    spawnSync(brokerAvailability()['nats-server']!, ['-t', '-c', NATS_CONF], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });

  it('is valid with the passwords in the environment, and refused without them', () => {
    expect(check(PASSWORDS).status).toBe(0);
    const without = check({});
    expect(without.status).not.toBe(0);
    expect(without.stdout + without.stderr).toContain("variable reference for 'MAM_AGENT_PASSWORD'");
  });
});
