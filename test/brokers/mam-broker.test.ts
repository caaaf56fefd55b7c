import { existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { planListen } from '../../src/core/broker/listen-plan.ts';
import type { BrokerConfig } from '../../src/core/config/config.ts';
import { makeWorkspace, runBin, runBinAsync, type Workspace } from '../helpers/cli.ts';
import { freePort } from '../helpers/free-port.ts';
import { collectMessages, connectPlainClient } from '../helpers/mqtt-client.ts';
import { spawnBin, type BinProcess } from './bin-process.ts';

// `mam broker` as a user runs it: the built bin, a real port, signals, and what it prints.

const READY = /mam broker listening on mqtt:\/\/127\.0\.0\.1:(\d+)(?: and ws:\/\/127\.0\.0\.1:(\d+))?/;

let ws: Workspace;
beforeEach(() => {
  ws = makeWorkspace();
});
afterEach(() => ws.cleanup());

async function startMamBroker(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ proc: BinProcess; port: number; wsPort?: number }> {
  const proc = spawnBin('mam', ['broker', ...args], ws, { env });
  const m = await proc.waitForStderr(READY);
  return { proc, port: Number(m[1]), ...(m[2] ? { wsPort: Number(m[2]) } : {}) };
}

async function stopMamBroker(proc: BinProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  proc.kill(signal);
  const r = await proc.result;
  expect(r.code).toBe(0);
  expect(r.stderr).toMatch(/mam broker stopped\n$/);
}

describe('mam broker', () => {
  it('keeps a retained message across a restart on the same --data, and stops cleanly on SIGTERM and SIGINT', async () => {
    const data = path.join(ws.root, 'broker-data');
    const first = await startMamBroker(['--port', '0', '--data', data], { MAM_LOG_LEVEL: 'info' });
    const pub = await connectPlainClient(`mqtt://127.0.0.1:${first.port}`, { clientId: 'mam-test-pub' });
    await pub.publishAsync('python/mqtt/jobs/aaaaaaaa/state', 'kept', { qos: 1, retain: true });
    await pub.endAsync();
    await stopMamBroker(first.proc, 'SIGTERM');
    // Connections are logged with pino on stderr.
    const logLines = first.proc.stderr.split('\n').filter((l) => l.startsWith('{'));
    expect(logLines.map((l) => JSON.parse(l) as { msg: string; client_id?: string })).toContainEqual(
      expect.objectContaining({ msg: 'client connected', client_id: 'mam-test-pub' }),
    );
    expect(statSync(data).mode & 0o777).toBe(0o700);

    const second = await startMamBroker(['--port', '0', '--data', data]);
    const sub = await connectPlainClient(`mqtt://127.0.0.1:${second.port}`);
    expect(await collectMessages(sub, 'python/mqtt/jobs/+/state', { count: 1, timeoutMs: 3_000 })).toEqual([
      { topic: 'python/mqtt/jobs/aaaaaaaa/state', payload: 'kept', retain: true, qos: 1 },
    ]);
    await sub.endAsync();
    await stopMamBroker(second.proc, 'SIGINT');
  });

  it('persists under <root>/.mam/broker by default and listens where MQTT_BROKER/MQTT_PORT say', async () => {
    const port = await freePort();
    const { proc, port: listening } = await startMamBroker([], { MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(port) });
    expect(listening).toBe(port);
    expect(proc.stderr).toContain(`(data ${path.join(ws.root, '.mam', 'broker')})`);
    expect(existsSync(path.join(ws.root, '.mam', 'broker'))).toBe(true);
    await stopMamBroker(proc);
  });

  it('a port in use is one line naming the port, exit 1', async () => {
    const squatter: Server = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => squatter.once('listening', r));
    const taken = (squatter.address() as { port: number }).port;
    try {
      const r = await runBinAsync('mam', ['broker', '--port', String(taken)], ws);
      expect(r).toEqual({ code: 1, stdout: '', stderr: `ERROR: port ${taken} on 127.0.0.1 is already in use\n` });
    } finally {
      squatter.close();
    }
  });

  it('a second broker on the same data folder is one line, exit 1', async () => {
    const { proc } = await startMamBroker(['--port', '0']);
    const r = await runBinAsync('mam', ['broker', '--port', '0'], ws);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ERROR: data dir \S+ is in use by another broker\n$/);
    await stopMamBroker(proc);
  });

  it('serves MQTT over WebSocket with --ws-port', async () => {
    const { proc, port, wsPort } = await startMamBroker(['--port', '0', '--ws-port', '0']);
    const viaWs = await connectPlainClient(`ws://127.0.0.1:${wsPort}/mqtt`);
    const viaTcp = await connectPlainClient(`mqtt://127.0.0.1:${port}`);
    const got = await collectMessages(viaWs, 'python/mqtt/jobs/#', {
      count: 1,
      timeoutMs: 3_000,
      afterSubscribe: () => viaTcp.publishAsync('python/mqtt/jobs/bbbbbbbb/events', 'x', { qos: 1 }),
    });
    expect(got.map((m) => m.payload)).toEqual(['x']);
    await Promise.all([viaWs.endAsync(), viaTcp.endAsync()]);
    await stopMamBroker(proc);
  });

  it('is all a new user needs: register → subscribe → publish → exit 0, with the configured credentials required', async () => {
    const port = await freePort();
    Object.assign(ws.env, { MQTT_PORT: String(port), MQTT_USERNAME: 'me', MQTT_PASSWORD: 'local-secret' });
    const { proc } = await startMamBroker([]);
    expect(proc.stderr).toContain(', user me)');
    await expect(connectPlainClient(`mqtt://127.0.0.1:${port}`, { username: 'me', password: 'nope', reconnectPeriod: 0 })).rejects.toThrow(
      /Bad username or password/i,
    );
    const job = 'cccccccc';
    expect(runBin('mam-register', ['--job-id', job, '--brief', 'try it'], ws).code).toBe(0);
    const sub = spawnBin('mam-subscribe', ['--job', job], ws);
    await sub.waitForStderr(/^SUBSCRIBED /m);
    for (const event of ['started', 'completed']) {
      expect((await runBinAsync('mam-publish', ['--job', job, '--event', event], ws)).code).toBe(0);
    }
    const r = await sub.result;
    expect(r.code).toBe(0);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { event: string }).event),
    ).toEqual(['started', 'completed']);
    // Refusals are logged at warn, so they show even at the workspace's MAM_LOG_LEVEL=warn.
    expect(proc.stderr).toContain('"msg":"auth refused"');
    expect(proc.stderr).not.toContain('local-secret');
    await stopMamBroker(proc);
  });

  it('usage errors are exit 64', () => {
    expect(runBin('mam', ['broker', '--port', 'http'], ws)).toMatchObject({ code: 64, stdout: '' });
    expect(runBin('mam', ['broker', '--port', '70000'], ws).stderr).toBe('ERROR: --port: expected a port number up to 65535\n');
  });
});

describe('where mam broker listens (planListen)', () => {
  const broker = (o: Partial<BrokerConfig> = {}): BrokerConfig => ({ host: '127.0.0.1', port: 1883, tls: false, clientIdPrefix: 'mam', keepalive: 60, ...o });

  it('flags win over the configuration', () => {
    expect(planListen({ host: '127.0.0.2', port: 2000 }, broker({ port: 3000 }))).toEqual({ host: '127.0.0.2', port: 2000, warnings: [] });
  });

  it('takes MQTT_BROKER/MQTT_PORT and the credentials when the broker is this machine', () => {
    expect(planListen({}, broker({ host: 'localhost', port: 1999, username: 'u', password: 'p' }))).toEqual({
      host: 'localhost',
      port: 1999,
      auth: { username: 'u', password: 'p' },
      warnings: [],
    });
  });

  it('falls back to 127.0.0.1:1883 and says so when MQTT_BROKER is another host', () => {
    const plan = planListen({}, broker({ host: 'mqtt.example.com', port: 8883, tls: true, username: 'u', password: 'p' }));
    expect(plan).toMatchObject({ host: '127.0.0.1', port: 1883 });
    expect(plan.auth).toBeUndefined();
    expect(plan.warnings).toEqual(['MQTT_BROKER=mqtt.example.com is not this machine: the other mam commands will not use this broker']);
  });

  it('warns about TLS it cannot serve, and about an open non-loopback listener', () => {
    expect(planListen({}, broker({ tls: true })).warnings).toEqual([expect.stringContaining('MQTT_TLS is set')]);
    expect(planListen({ host: '0.0.0.0' }, broker()).warnings).toEqual([expect.stringContaining('without TLS or passwords')]);
  });
});
