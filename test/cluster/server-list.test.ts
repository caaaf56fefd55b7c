import { createServer, type Server, type Socket } from 'node:net';
import { generate, parser } from 'mqtt-packet';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { spawnBin } from '../brokers/bin-process.ts';
import { type AedesTestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { makeWorkspace, type Workspace } from '../helpers/cli.ts';
import { runInProcess } from '../helpers/in-process.ts';
import { connectPlainClient, receivedMessages } from '../helpers/mqtt-client.ts';
import { freePort } from '../helpers/free-port.ts';
import { waitUntil } from '../helpers/wait.ts';

/**
 * A broker list with a dead server in it, on the in-process broker (no cluster needed): what each
 * command does when the server it tries first does not answer (docs/cluster.md).
 */
/** A server that accepts connections and never answers (closed when the test ends): `host:port`. */
async function startSilentServer(): Promise<{ address: string }> {
  const sockets = new Set<Socket>();
  // Reads and drops what it is sent (a paused socket would never see the client's FIN, and would
  // stay open in this process after the client has closed its end).
  const silent: Server = createServer((s) => sockets.add(s.resume()));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  onTestFinished(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const address = silent.address();
  return { address: `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

describe('a broker list whose first server is down', () => {
  useBrokerCleanup();
  let broker: AedesTestBroker;
  let dead: string;
  let ws: Workspace;
  beforeEach(async () => {
    broker = await startAedesBroker();
    // A port nothing listens on: the connection is refused at once.
    dead = `127.0.0.1:${await freePort()}`;
    ws = makeWorkspace();
  });
  afterEach(() => ws.cleanup());

  const live = () => `127.0.0.1:${broker.port}`;
  const register = async (): Promise<string> => {
    const r = await runInProcess('mam-register', ['--timeout', '30', '--brief', 'list'], ws);
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as { job_id: string }).job_id;
  };

  it('mam-publish tries the next server after the refusal, within its attempts', async () => {
    const job = await register();
    const sub = spawnBin('mam-subscribe', ['--job', job], ws, { env: { MQTT_SERVERS: live() } });
    await sub.waitForStderr(/^SUBSCRIBED /m);
    const t0 = Date.now();
    const r = await runInProcess('mam-publish', ['--job', job, '--event', 'completed', '--attempts', '2'], ws, { env: { MQTT_SERVERS: `${dead},${live()}` } });
    expect(r.code, r.stderr).toBe(0);
    // Try 1 refused, then the contract's first back-off (0.5 s), then try 2 on the next server.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
    const done = await sub.result;
    expect(done.code).toBe(0);
    expect(
      done.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { event: string }).event),
    ).toEqual(['completed']);
  });

  it('with --attempts 1 only the first server is tried: exit 2, recorded on disk, the dead server named', async () => {
    const job = await register();
    const r = await runInProcess('mam-publish', ['--job', job, '--event', 'started', '--attempts', '1'], ws, { env: { MQTT_SERVERS: `${dead},${live()}` } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(dead);
    expect(r.stderr).not.toContain(live());
  });

  it('mam-subscribe connects through the next server and says SUBSCRIBED', async () => {
    const job = await register();
    const sub = spawnBin('mam-subscribe', ['--job', job], ws, { env: { MQTT_SERVERS: `${dead},${live()}` } });
    await sub.waitForStderr(/^SUBSCRIBED /m);
    const r = await runInProcess('mam-publish', ['--job', job, '--event', 'error'], ws, { env: { MQTT_SERVERS: live() } });
    expect(r.code, r.stderr).toBe(0);
    const done = await sub.result;
    expect(done.code).toBe(1);
    expect(
      done.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { event: string }).event),
    ).toEqual(['error']);
  });

  it('mam-subscribe gets past a server that accepts the connection and never answers, within its first-connect window', async () => {
    // A host that swallows CONNECT: no refusal to move on from, only the per-server timeout.
    const silent = await startSilentServer();
    const job = await register();
    const sub = spawnBin('mam-subscribe', ['--job', job], ws, { env: { MQTT_SERVERS: `${silent.address},${live()}` } });
    await sub.waitForStderr(/^SUBSCRIBED /m, 10_000);
    expect((await runInProcess('mam-publish', ['--job', job, '--event', 'completed'], ws, { env: { MQTT_SERVERS: live() } })).code).toBe(0);
    expect((await sub.result).code).toBe(0);
  });

  /**
   * A broker that accepts every CONNECT and answers SUBSCRIBE with nothing (`mute`: what NATS 2.9
   * does when a subscription's JetStream consumer cannot be created in time, after a node of the
   * cluster is lost) or with 0x80 (`refuse`: a permission, or NATS failing that consumer at once).
   */
  async function fakeBroker(onSubscribe: 'mute' | 'refuse' | { slowRefusals: number }): Promise<{ server: string; subscribes: () => number }> {
    const sockets = new Set<Socket>();
    let subscribes = 0;
    const fake: Server = createServer((s) => {
      sockets.add(s);
      const p = parser();
      p.on('packet', (packet) => {
        if (packet.cmd === 'connect') s.write(generate({ cmd: 'connack', returnCode: 0, sessionPresent: false }));
        if (packet.cmd === 'pingreq') s.write(generate({ cmd: 'pingresp' }));
        if (packet.cmd === 'subscribe') {
          subscribes++;
          if (onSubscribe === 'refuse') s.write(generate({ cmd: 'suback', messageId: packet.messageId, granted: packet.subscriptions.map(() => 0x80) }));
          if (typeof onSubscribe === 'object') {
            // NATS after a node loss: seconds spent on the JetStream consumer, then 0x80; later, granted.
            const code = subscribes <= onSubscribe.slowRefusals ? 0x80 : 1;
            const suback = generate({ cmd: 'suback', messageId: packet.messageId, granted: packet.subscriptions.map(() => code) });
            setTimeout(() => s.writable && s.write(suback), code === 0x80 ? 2_100 : 0);
          }
        }
      });
      s.on('data', (d: Buffer) => p.parse(d));
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    onTestFinished(() => {
      for (const s of sockets) s.destroy();
      fake.close();
    });
    const address = fake.address();
    return { server: `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, subscribes: () => subscribes };
  }

  it.each([
    ['never answers SUBSCRIBE', 'mute'],
    ['refuses the subscription (0x80)', 'refuse'],
  ] as const)(
    'mam-subscribe leaves a server that CONNACKs and then %s, for the next one',
    async (_, how) => {
      const fake = await fakeBroker(how);
      const job = await register();
      const sub = spawnBin('mam-subscribe', ['--job', job], ws, { env: { MQTT_SERVERS: `${fake.server},${live()}` } });
      await sub.waitForStderr(/^SUBSCRIBED /m, 25_000);
      expect(fake.subscribes()).toBe(1);
      expect((await runInProcess('mam-publish', ['--job', job, '--event', 'completed'], ws, { env: { MQTT_SERVERS: live() } })).code).toBe(0);
      expect((await sub.result).code).toBe(0);
    },
    40_000,
  );

  it('a subscription refused on every try is final: one line, exit 3', async () => {
    const fake = await fakeBroker('refuse');
    const job = await register();
    const r = await runInProcess('mam-subscribe', ['--job', job], ws, { env: { MQTT_SERVERS: fake.server }, timeoutMs: 30_000 });
    expect(fake.subscribes()).toBe(3);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`^ERROR: broker mqtt://${fake.server} refused the subscription to python/mqtt/jobs/${job}/\\+\n$`, 'm'));
  }, 40_000);

  it('a refusal that took the server seconds (a cluster still settling) is retried past three: SUBSCRIBED on the fifth try', async () => {
    const fake = await fakeBroker({ slowRefusals: 4 });
    const job = await register();
    const sub = spawnBin('mam-subscribe', ['--job', job], ws, { env: { MQTT_SERVERS: fake.server } });
    // The old rule gave up after three refusals, quick or slow: exit 3 before SUBSCRIBED.
    await sub.waitForStderr(/^SUBSCRIBED /m, 50_000);
    expect(fake.subscribes()).toBe(5);
    sub.kill('SIGTERM');
    await sub.result;
  }, 60_000);

  it('mam-subscribe with every server down exits 3 naming them all', async () => {
    const job = await register();
    const other = `127.0.0.1:${await freePort()}`;
    const r = await runInProcess('mam-subscribe', ['--job', job], ws, { env: { MQTT_SERVERS: `${dead},${other}` }, timeoutMs: 20_000 });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`${dead},${other}`);
  });

  it('the heartbeat timer beats through the next server', async () => {
    const job = await register();
    const sub = spawnBin('mam-subscribe', ['--job', job], ws, { env: { MQTT_SERVERS: live() } });
    await sub.waitForStderr(/^SUBSCRIBED /m);
    const list = { MQTT_SERVERS: `${dead},${live()}` };
    const started = await runInProcess('mam-publish', ['--job', job, '--event', 'started', '--heartbeat', '0.5', '--watch-pid', String(process.pid)], ws, {
      env: list,
    });
    expect(started.code, started.stderr).toBe(0);
    const beats = () => sub.stdout.split('\n').filter((l) => l.includes('"detail":"heartbeat"')).length;
    expect(await waitUntil(() => beats() >= 2, 10_000)).toBe(true);
    expect((await runInProcess('mam-publish', ['--job', job, '--event', 'completed'], ws, { env: list })).code).toBe(0);
    expect((await sub.result).code).toBe(0);
  });

  it('mam-remote run takes a dispatch through the next server and reports completed', async () => {
    const secret = { MAM_DISPATCH_SECRET: 'server-list-test-secret-0123' };
    const job = await register();
    const session = `host-${job}`;
    const runnerWs = makeWorkspace(secret);
    try {
      const runner = spawnBin('mam-remote', ['run', '--session', session, '--once', '--exec', 'true'], runnerWs, {
        env: { MQTT_SERVERS: `${dead},${live()}` },
      });
      await runner.waitForStderr(/SUBSCRIBED/);
      const watch = runInProcess('mam-subscribe', ['--job', job, '--remote', '--timeout', '30'], ws, { env: { MQTT_SERVERS: live(), ...secret } });
      const d = await runInProcess('mam-remote', ['dispatch', '--job', job, '--session', session], ws, { env: { MQTT_SERVERS: live(), ...secret } });
      expect(d.code, d.stderr).toBe(0);
      expect((await watch).code).toBe(0);
      expect((await runner.result).code).toBe(0);
    } finally {
      runnerWs.cleanup();
    }
  });
  /** The retained state a fresh client gets for `job` from the live server: what a late watcher would see. */
  const retainedState = async (job: string): Promise<{ status: string; last_event: string } | undefined> => {
    const client = await connectPlainClient(`mqtt://${live()}`);
    try {
      await client.subscribeAsync(`python/mqtt/jobs/${job}/state`, { qos: 1 });
      await waitUntil(() => receivedMessages(client).length > 0, 2_000);
      const got = receivedMessages(client)[0];
      return got === undefined ? undefined : (JSON.parse(got.payload) as { status: string; last_event: string });
    } finally {
      await client.endAsync(true);
    }
  };

  it('mam-close tells watchers through the next server when the first refuses', async () => {
    const job = await register();
    const r = await runInProcess('mam-close', ['--job', job, '--request', 'cancelled'], ws, { env: { MQTT_SERVERS: `${dead},${live()}` } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('were not told');
    expect(await retainedState(job)).toMatchObject({ status: 'cancelled', last_event: 'cancelled' });
  });

  it('mam-close gets past a first server that swallows CONNECT, within its few seconds', async () => {
    const silent = await startSilentServer();
    const job = await register();
    const t0 = Date.now();
    const r = await runInProcess('mam-close', ['--job', job, '--request', 'completed'], ws, { env: { MQTT_SERVERS: `${silent.address},${live()}` } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('were not told');
    // The silent server gets half of the 3 s budget, the live one answers at once.
    expect(Date.now() - t0).toBeLessThan(3_000 + 2_000);
    expect(await retainedState(job)).toMatchObject({ status: 'completed', last_event: 'completed' });
  });

  it('mam-close with every server down commits the close and warns once, naming the last server it tried', async () => {
    const job = await register();
    const other = `127.0.0.1:${await freePort()}`;
    const r = await runInProcess('mam-close', ['--job', job, '--request', 'cancelled'], ws, { env: { MQTT_SERVERS: `${dead},${other}` } });
    expect(r.code).toBe(0);
    expect(r.stderr.match(/were not told/g)).toHaveLength(1);
    expect(r.stderr).toContain(other);
    expect((JSON.parse(r.stdout) as { status: string }).status).toBe('cancelled');
  });
});
