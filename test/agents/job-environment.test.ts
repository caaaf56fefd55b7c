import path from 'node:path';
import { expect, it, onTestFinished } from 'vitest';
import { jobEnvironment } from '../../src/core/agents/agent-launch.ts';
import { loadConfig } from '../../src/core/config/config.ts';
import { Registry } from '../../src/core/registry/registry.ts';
import { makeWorkspace } from '../helpers/cli.ts';

/** What an agent's environment says about the broker must load back into the same broker settings. */
async function agentBroker(env: NodeJS.ProcessEnv) {
  const ws = makeWorkspace(env);
  onTestFinished(() => ws.cleanup());
  const config = loadConfig(ws.env, ws.root);
  const registry = new Registry({ registryDir: config.registryDir, logDir: config.logDir }, () => undefined);
  const record = await registry.register({
    brief: 'x',
    transport: 'herdr',
    dependsOn: [],
    heartbeatSec: 30,
    heartbeatMisses: 4,
    ackTimeoutSec: 180,
    timeoutSec: 3600,
  });
  const agentEnv = jobEnvironment(config, registry, record, path.join(ws.root, 'prompt'));
  // The agent's own process: only what the launch hands it (PATH and HOME aside).
  const seen = loadConfig({ PATH: ws.env.PATH, HOME: ws.env.HOME, ...agentEnv }, ws.root);
  return { config, agentEnv, seen };
}

it('a broker list reaches the agent: MQTT_BROKER is its first server, MQTT_SERVERS the whole list', async () => {
  const { config, agentEnv, seen } = await agentBroker({ MQTT_BROKER: 'n1:4001,n2:4002,n3' });
  expect(agentEnv.MQTT_BROKER).toBe('n1');
  expect(agentEnv.MQTT_PORT).toBe('4001');
  expect(agentEnv.MQTT_SERVERS).toBe('n1:4001,n2:4002,n3:1883');
  expect(seen.broker.servers).toEqual(config.broker.servers);
  expect([seen.broker.host, seen.broker.port]).toEqual(['n1', 4001]);
});

it('one broker: no MQTT_SERVERS in the agent environment', async () => {
  const { agentEnv, seen } = await agentBroker({ MQTT_BROKER: 'solo', MQTT_PORT: '4100' });
  expect(agentEnv.MQTT_SERVERS).toBeUndefined();
  expect([seen.broker.host, seen.broker.port, seen.broker.servers]).toEqual(['solo', 4100, undefined]);
});
