import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeWithBroker } from '../helpers/brokers.ts';
import { makeWorkspace, runBin, runBinAsync, type RunResult, type Workspace } from '../helpers/cli.ts';
import { startDockerNats, type Credentials, type DockerNatsBroker } from '../helpers/docker-brokers.ts';
import { collectMessages, connectPlainClient } from '../helpers/mqtt-client.ts';
import { expectOneErrorLine, spawnBin } from './bin-process.ts';

// The bins against nats-server running docker/nats/nats.conf: accounts, permissions, MQTT engine.

const ROOT = 'python/mqtt/jobs'; // MAM_TOPIC_ROOT's default, which the config's permissions name

interface Event {
  job_id: string;
  event: string;
  seq: number;
  last_event?: string;
}
/**
 * The subscriber's lines. It subscribes one filter per job, so NATS delivers a job's event before
 * the state published after it, and the watch prints the terminal event itself, not a state line.
 */
const events = (r: { stdout: string }): Event[] =>
  r.stdout.trim() === ''
    ? []
    : r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Event);

describeWithBroker('nats-server', 'NATS as docker/nats/nats.conf runs it', () => {
  let nats: DockerNatsBroker;
  let ws: Workspace;
  const as = (user: Credentials, extra: NodeJS.ProcessEnv = {}): { env: NodeJS.ProcessEnv } => ({
    env: { MQTT_USERNAME: user.username, MQTT_PASSWORD: user.password, ...extra },
  });
  const register = (job: string) => expect(runBin('mam-register', ['--job-id', job, '--timeout', '60'], ws).code).toBe(0);
  const publish = (job: string, event: string, user: Credentials = nats.users.agent, extra: string[] = []): Promise<RunResult> =>
    runBinAsync('mam-publish', ['--job', job, '--event', event, '--attempts', '1', ...extra], ws, as(user));
  /** A plain MQTT client as mam_agent, recording one job's topics (the server is shared: filter). */
  const tap = async (job: string, timeoutMs: number, act: () => Promise<unknown>) => {
    const client = await connectPlainClient(nats.url, { username: nats.users.agent.username, password: nats.users.agent.password });
    try {
      return await collectMessages(client, `${ROOT}/${job}/#`, { timeoutMs, afterSubscribe: act });
    } finally {
      await client.endAsync();
    }
  };

  beforeAll(async () => {
    nats = await startDockerNats();
  });
  beforeEach(() => {
    // One workspace, whose registry holds the tokens, for the agent and the observer alike.
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(nats.port) });
  });
  afterEach(() => ws.cleanup());

  it('runs the whole lifecycle as mam_agent on the default topic root', async () => {
    const job = 'a0000001';
    register(job);
    const sub = spawnBin('mam-subscribe', ['--job', job], ws, as(nats.users.agent));
    await sub.waitForStderr(/^SUBSCRIBED a0000001 mqtt:\/\/127\.0\.0\.1:\d+$/m);
    const seen = await tap(job, 1_500, async () => {
      for (const [event, detail] of [
        ['started', 'go'],
        ['progress', 'half way'],
        ['completed', 'done'],
      ] as const) {
        const r = await publish(job, event, nats.users.agent, ['--detail', detail]);
        expect(r.code, r.stderr).toBe(0);
      }
    });
    const r = await sub.result;
    expect(r.code).toBe(0);
    expect(events(r).map((e) => [e.event, e.seq])).toEqual([
      ['started', 1],
      ['progress', 2],
      ['completed', 3],
    ]);
    // On the wire: the contract's topics under the default root, a state after each event.
    expect(seen.map((m) => m.topic)).toEqual([1, 2, 3].flatMap(() => [`${ROOT}/${job}/events`, `${ROOT}/${job}/state`]));
  });

  it('mam-subscribe --all as mam_observer sees every job, and ends with 0 on SIGTERM', async () => {
    const [a, b] = ['a0000002', 'a0000003'];
    register(a);
    register(b);
    const monitor = spawnBin('mam-subscribe', ['--all'], ws, as(nats.users.observer));
    await monitor.waitForStderr(/^SUBSCRIBED all /m);
    for (const [job, event] of [
      [a, 'started'],
      [b, 'started'],
      [a, 'completed'],
      [b, 'error'],
    ] as const) {
      expect((await publish(job, event)).code).toBe(0);
    }
    await expect.poll(() => events(monitor).length, { timeout: 5_000 }).toBe(4);
    monitor.kill('SIGTERM');
    const r = await monitor.result;
    expect(r.code).toBe(0);
    expect(
      events(r)
        .map((e) => `${e.job_id} ${e.event}`)
        .sort(),
    ).toEqual([`${a} completed`, `${a} started`, `${b} error`, `${b} started`]);
  });

  it("an observer's publish is acknowledged but reaches no subscriber", async () => {
    const job = 'a0000004';
    register(job);
    const seen = await tap(job, 1_500, async () => {
      // NATS sends the PUBACK for a publish its permissions refused: mam-publish cannot tell.
      const r = await publish(job, 'started', nats.users.observer);
      expect(r.code).toBe(0);
      // The agent's own publish after it does arrive: the tap was listening.
      expect((await publish(job, 'progress')).code).toBe(0);
    });
    expect(seen.map((m) => (JSON.parse(m.payload) as Event).seq)).toEqual([2, 2]);
    expect(readFileSync(nats.logPath, 'utf8')).toMatch(/Publish Violation - User "mam_observer", Subject "python\.mqtt\.jobs\.a0000004\.events"/);
  });

  it('a wrong password: mam-publish exit 2 and mam-subscribe exit 3, one line naming broker and user', async () => {
    const job = 'a0000005';
    register(job);
    const wrong = { username: 'mam_agent', password: 'not-the-password' };
    const broker = `mqtt://127.0.0.1:${nats.port}`;
    const pub = await runBinAsync('mam-publish', ['--job', job, '--event', 'started'], ws, as(wrong));
    expect(expectOneErrorLine(pub, 2)).toContain(`broker ${broker} refused user mam_agent: not authorized`);
    expect(pub.stderr).not.toContain('not-the-password');
    const sub = await runBinAsync('mam-subscribe', ['--job', job], ws, as(wrong));
    expect(expectOneErrorLine(sub, 3)).toContain(`broker ${broker} refused user mam_agent`);
    expect(sub.stdout).toBe('');
  });

  it('serves MQTT over WebSocket at /mqtt, for dashboards', async () => {
    const { username, password } = nats.users.observer;
    const dashboard = await connectPlainClient(nats.wsUrl, { username, password });
    const job = 'a0000006';
    register(job);
    const got = await collectMessages(dashboard, `${ROOT}/${job}/events`, { count: 1, timeoutMs: 5_000, afterSubscribe: () => publish(job, 'started') });
    expect((JSON.parse(got[0]!.payload) as Event).event).toBe('started');
    await dashboard.endAsync();
  });

  it('refuses a MAM_TOPIC_ROOT that NATS cannot carry before connecting (exit 1, one line)', () => {
    const r = runBin('mam-subscribe', ['--all'], ws, as(nats.users.agent, { MAM_TOPIC_ROOT: 'python.mqtt.jobs' }));
    expect(expectOneErrorLine(r, 1)).toMatch(/^ERROR: MAM_TOPIC_ROOT="python\.mqtt\.jobs": /);
  });
});
