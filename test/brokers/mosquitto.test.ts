import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeWithBroker, startMosquitto, TEST_TLS } from '../helpers/brokers.ts';
import { makeWorkspace, runBin, runBinAsync, type Workspace } from '../helpers/cli.ts';
import { startDockerMosquitto, type Credentials, type DockerMosquittoBroker } from '../helpers/docker-brokers.ts';
import { collectMessages, connectPlainClient } from '../helpers/mqtt-client.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';
import { expectOneErrorLine, spawnBin } from './bin-process.ts';

// The bins against mosquitto running docker/mosquitto/{mosquitto.conf,acl,make-passwd.sh}.

const ROOT = 'python/mqtt/jobs';
/** Test-only, appended after the production ACL: it sees everything that is delivered, and may write anywhere. */
const WITNESS = { username: 'mam_test_witness', password: 'witness-pw', acl: ['topic readwrite #'] };

describeWithBroker('mosquitto', 'Mosquitto as docker/mosquitto runs it: TLS 1.3, passwords, ACL', () => {
  let ws: Workspace;
  // One server for the tests that only read its configuration; mTLS and restart() get their own.
  let shared: DockerMosquittoBroker;
  beforeAll(async () => {
    shared = await startDockerMosquitto({ extraUsers: [WITNESS] });
  });
  beforeEach(() => {
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1' });
  });
  afterEach(() => ws.cleanup());

  /** The environment of a MAM client of `broker`: TLS with the test CA, as `user`. */
  const client = (broker: DockerMosquittoBroker, user: Credentials, extra: NodeJS.ProcessEnv = {}): { env: NodeJS.ProcessEnv } => ({
    env: {
      MQTT_PORT: String(broker.port),
      MQTT_TLS: 'true',
      MQTT_CA_CERTS: broker.caFile,
      MQTT_USERNAME: user.username,
      MQTT_PASSWORD: user.password,
      ...extra,
    },
  });
  const register = (job: string) => expect(runBin('mam-register', ['--job-id', job, '--timeout', '60'], ws).code).toBe(0);
  const publish = (job: string, event: string, env: { env: NodeJS.ProcessEnv }) =>
    runBinAsync('mam-publish', ['--job', job, '--event', event, '--attempts', '1'], ws, env);
  const witness = (broker: DockerMosquittoBroker) => connectPlainClient(broker.url, { ...WITNESS, ca: readFileSync(broker.caFile), reconnectPeriod: 0 });

  it('runs the lifecycle over TLS 1.3 with a password and no client certificate; older TLS is refused', async () => {
    const broker = shared;
    const job = 'b0000001';
    register(job);
    const sub = spawnBin('mam-subscribe', ['--job', job], ws, client(broker, broker.users.agent));
    await sub.waitForStderr(/^SUBSCRIBED b0000001 mqtts:\/\/127\.0\.0\.1:\d+$/m);
    for (const event of ['started', 'progress', 'completed']) expect((await publish(job, event, client(broker, broker.users.agent))).code).toBe(0);
    const r = await sub.result;
    expect(r.code).toBe(0);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { event: string }).event),
    ).toEqual(['started', 'progress', 'completed']);

    const ca = readFileSync(broker.caFile);
    const handshake = (maxVersion: 'TLSv1.2' | 'TLSv1.3') =>
      new Promise<string>((resolve) => {
        const s = tlsConnect({ host: broker.host, port: broker.port, ca, maxVersion }, () => {
          resolve(s.getProtocol() ?? 'none');
          s.destroy();
        });
        s.once('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code ?? err.message}`));
      });
    expect(await handshake('TLSv1.3')).toBe('TLSv1.3');
    expect(await handshake('TLSv1.2')).toMatch(/^error /);
  });

  it('with require_certificate (mTLS): a client certificate signed by the CA is needed', async () => {
    const broker = await startDockerMosquitto({ requireClientCert: true });
    const job = 'b0000002';
    register(job);
    const withCert = client(broker, broker.users.agent, { MQTT_CERTFILE: TEST_TLS.clientCert, MQTT_KEYFILE: TEST_TLS.clientKey });
    expect((await publish(job, 'started', withCert)).code).toBe(0);
    const without = await publish(job, 'progress', client(broker, broker.users.agent));
    expect(expectOneErrorLine(without, 2)).toMatch(new RegExp(`broker mqtts://127\\.0\\.0\\.1:${broker.port}: TLS handshake failed`));
  });

  it('an untrusted CA and a plaintext attempt fail cleanly: exit 2 (publish) and 3 (subscribe), one line', async () => {
    const broker = shared;
    const job = 'b0000003';
    register(job);
    // A second CA, made here, that did not sign the server's certificate.
    const dir = tempDirForTest('mam-ca-');
    const otherCa = path.join(dir, 'other-ca.crt');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=mam-untrusted-ca',
        '-keyout',
        path.join(dir, 'other-ca.key'),
        '-out',
        otherCa,
      ],
      { stdio: 'ignore' },
    );
    const untrusted = client(broker, broker.users.agent, { MQTT_CA_CERTS: otherCa });
    const where = `mqtts://127.0.0.1:${broker.port}`;
    expect(expectOneErrorLine(await publish(job, 'started', untrusted), 2)).toContain(`broker ${where}: TLS handshake failed`);
    const sub = await runBinAsync('mam-subscribe', ['--job', job], ws, untrusted);
    expect(expectOneErrorLine(sub, 3)).toContain(`broker ${where}: TLS handshake failed`);

    const plain = client(broker, broker.users.agent, { MQTT_TLS: 'false', MQTT_CA_CERTS: '' });
    expect(expectOneErrorLine(await publish(job, 'started', plain), 2)).toContain(`broker mqtt://127.0.0.1:${broker.port} unreachable`);
  });

  it('the ACL keeps an agent to the job tree and an observer to reading: refused publishes are acknowledged, and dropped', async () => {
    const broker = shared;
    const tap = await witness(broker);
    const job = 'b0000004';
    register(job);
    const seen = await collectMessages(tap, '#', {
      timeoutMs: 1_500,
      afterSubscribe: async () => {
        // Outside the tree: mosquitto sends the PUBACK (so exit 0), and delivers nothing.
        expect((await publish(job, 'started', client(broker, broker.users.agent, { MAM_TOPIC_ROOT: 'elsewhere/jobs' }))).code).toBe(0);
        expect((await publish(job, 'progress', client(broker, broker.users.observer))).code).toBe(0);
        expect((await publish(job, 'progress', client(broker, broker.users.agent))).code).toBe(0);
      },
    });
    // Retained messages of earlier tests on this server come with retain=true; live ones without.
    const live = seen.filter((m) => !m.retain);
    expect(live.map((m) => [m.topic, (JSON.parse(m.payload) as { seq: number }).seq])).toEqual([
      [`${ROOT}/${job}/events`, 3],
      [`${ROOT}/${job}/state`, 3],
    ]);
    // Reading outside the tree: mosquitto 2.0 grants the subscription, and delivers nothing to it.
    const agent = await connectPlainClient(broker.url, { ...broker.users.agent, ca: readFileSync(broker.caFile), reconnectPeriod: 0 });
    const outside = await collectMessages(agent, 'elsewhere/#', { timeoutMs: 1_000, afterSubscribe: () => tap.publishAsync('elsewhere/x', 'y', { qos: 1 }) });
    expect(outside).toEqual([]);
    await Promise.all([tap.endAsync(), agent.endAsync(true)]);
  });

  it('mam-subscribe --all as mam_observer; retained states survive a restart (persistence)', async () => {
    const broker = await startDockerMosquitto({ extraUsers: [WITNESS] });
    const job = 'b0000005';
    register(job);
    const monitor = spawnBin('mam-subscribe', ['--all'], ws, client(broker, broker.users.observer));
    await monitor.waitForStderr(/^SUBSCRIBED all /m);
    for (const event of ['started', 'completed']) expect((await publish(job, event, client(broker, broker.users.agent))).code).toBe(0);
    await expect.poll(() => monitor.stdout.trim().split('\n').length, { timeout: 5_000 }).toBe(2);
    monitor.kill('SIGTERM');
    expect((await monitor.result).code).toBe(0);

    await broker.restart();
    const tap = await witness(broker);
    const kept = await collectMessages(tap, `${ROOT}/${job}/+`, { count: 2, timeoutMs: 5_000 });
    expect(kept.map((m) => [m.topic, m.retain]).sort()).toEqual([
      [`${ROOT}/${job}/events`, true],
      [`${ROOT}/${job}/state`, true],
    ]);
    await tap.endAsync();
  });

  it('keeps 1,500 QoS 1 messages for an offline session, where the default max_queued_messages (1000) drops some', async () => {
    const count = 1_500;
    const queued = async (url: string, opts: object) => {
      const session = { ...opts, clientId: 'mam-test-offline', clean: false, reconnectPeriod: 0 };
      const sub = await connectPlainClient(url, session);
      await sub.subscribeAsync('python/mqtt/jobs/q/#', { qos: 1 });
      await sub.endAsync();
      const pub = await connectPlainClient(url, opts);
      for (let i = 0; i < count; i++) void pub.publish(`python/mqtt/jobs/q/${i}`, 'x', { qos: 1 });
      await pub.endAsync(); // waits for every PUBACK
      const back = await connectPlainClient(url, session);
      let got = 0;
      back.on('message', () => got++);
      await new Promise((r) => setTimeout(r, 1_500));
      await back.endAsync();
      await (await connectPlainClient(url, { ...session, clean: true })).endAsync(); // no session left behind
      return got;
    };
    expect(await queued(shared.url, { ...WITNESS, ca: readFileSync(shared.caFile) })).toBe(count);
    const stock = await startMosquitto(); // mosquitto's defaults, for contrast
    expect(await queued(stock.url, {})).toBeLessThan(count);
  });
});
