import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithBroker } from '../helpers/brokers.ts';
import { type Workspace, runBinAsync } from '../helpers/cli.ts';
import { type DockerMosquittoBroker, startDockerMosquitto } from '../helpers/docker-brokers.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { sleep, waitUntil } from '../helpers/wait.ts';
import { fleetWorkspace, jsonOut, stopTurnHoldersAtEnd } from './fleet-fixtures.ts';

/**
 * The fleet on Mosquitto as docker/mosquitto runs it (TLS, passwords, the production ACL): agents
 * with `mam_agent` claim turns and see presence; an observer's credentials (`mam_observer`, a
 * dashboard's) cannot clear the winner's retained bid even once its holder is gone, so the turn
 * keeps one winner (docs/coordination-reference.md, "Which guarantee holds where"). Old ACL: the
 * agents root was not granted, and `mam claim --broker` could not even subscribe.
 */

describeWithBroker('mosquitto', 'turn claims under the production Mosquitto ACL', () => {
  let broker: DockerMosquittoBroker;
  beforeAll(async () => {
    broker = await startDockerMosquitto();
  });
  afterAll(() => broker?.stop());
  const agentHost = (): Workspace =>
    fleetWorkspace(broker.port, {
      MQTT_TLS: 'true',
      MQTT_CA_CERTS: broker.caFile,
      MQTT_USERNAME: broker.users.agent.username,
      MQTT_PASSWORD: broker.users.agent.password,
    });

  it("one winner, and an observer's clear of its bid after the holder died changes nothing", { timeout: 60_000 }, async () => {
    const [ada, bob] = [agentHost(), agentHost()];
    const turn = `C1-acl${Date.now()}-1718000000`;
    const claim = (ws: Workspace, agent: string) =>
      runBinAsync('mam', ['claim', '--broker', '--settle-ms', '300', '--ttl', '30', '--turn', turn, '--agent', agent], ws);
    const first = await claim(ada, 'ada');
    expect(first.code, first.stderr).toBe(0);
    // The holder that would put a cleared bid back: killed, so only the ACL stands in the way.
    for (const pid of stopTurnHoldersAtEnd(ada)) process.kill(pid, 'SIGKILL');
    const observer = await connectPlainClient(broker.url, { ...broker.users.observer, ca: readFileSync(broker.caFile), reconnectPeriod: 0 });
    const bidTopic = `python/mqtt/agents/turns/${turn}/ada`;
    // The observer may read the bid…
    const seen: Buffer[] = [];
    observer.on('message', (_t, p) => seen.push(p));
    await observer.subscribeAsync(bidTopic, { qos: 1 });
    expect(await waitUntil(() => seen.length > 0, 5_000)).toBe(true);
    // …but its clear and its overwrite are acknowledged and dropped.
    await observer.publishAsync(bidTopic, '', { qos: 1, retain: true });
    await observer.publishAsync(bidTopic, '{"forged":true}', { qos: 1, retain: true });
    await sleep(300);
    await observer.endAsync();
    const second = await claim(bob, 'bob');
    expect(second.code, second.stderr).toBe(4);
    expect(jsonOut(second)).toMatchObject({ won: false, winner: 'ada' });
  });

  it('presence works for agents and is readable, not writable, by an observer', { timeout: 30_000 }, async () => {
    const ws = agentHost();
    const listed = await runBinAsync('mam', ['agents', '--json'], ws);
    expect(listed.code, listed.stderr).toBe(0);
    const asObserver = await runBinAsync('mam', ['agents', '--json'], ws, {
      env: { MQTT_USERNAME: broker.users.observer.username, MQTT_PASSWORD: broker.users.observer.password },
    });
    expect(asObserver.code, asObserver.stderr).toBe(0);
  });
});
