import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAedesBroker } from '../helpers/brokers.ts';
import { makeWorkspace } from '../helpers/cli.ts';
import { chaosRng, report, runBin, scale, sleep, spawnBin } from './chaos-kit.ts';
import { auditOf, recordOf } from './disk-invariants.ts';
import { SecretScan, endWithSecretScan } from './secret-scan.ts';

/**
 * The delegator's cancel at a random moment of a remote job's life (contract §6): before the runner
 * takes the dispatch, while it adopts it and publishes `started`, or while the agent runs. Whenever
 * it lands, the agent never runs to its end, the runner ends within seconds with 1, its record says
 * `cancelled`, and no terminal event of the attempt is published.
 */

const rng = chaosRng('remote-cancel');
const ROUNDS = scale(6, 40);
const scan = new SecretScan();

afterAll(() => endWithSecretScan(scan));

describe('remote: a cancel at a random moment', () => {
  it(`${ROUNDS} cancels between dispatch and the agent's end: the agent never finishes, the runner stops within seconds`, {
    timeout: scale(120_000, 900_000),
  }, async () => {
    const secret = `dispatch-secret-${rng.int(1e8, 9e8)}`;
    scan.secret('MAM_DISPATCH_SECRET', secret);
    const broker = await startAedesBroker();
    await scan.captureWire(broker.url);
    const env = { MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port), MQTT_KEEPALIVE: '2', MAM_DISPATCH_SECRET: secret };
    const delegator = scan.workspace(makeWorkspace(env));
    const host = scan.workspace(makeWorkspace(env));
    const delays: number[] = [];
    let agentStarted = 0;
    // Windows of the job's start: before the runner took it, while it adopts it and publishes
    // `started` (a few hundred ms), and once the agent runs. Every window at least once.
    const windows = rng.deck(
      [
        [0, 30],
        [30, 300],
        [300, 800],
        [800, 2_000],
      ] as const,
      ROUNDS,
    );
    for (let round = 1; round <= ROUNDS; round++) {
      const log = path.join(host.root, `agent-${round}.log`);
      const reg = await runBin('mam-register', ['--brief', `round ${round}`, '--heartbeat', '1'], delegator);
      const id = (JSON.parse(reg.stdout) as { job_id: string }).job_id;
      const session = `S${round}`;
      const runner = spawnBin('mam-remote', ['run', '--session', session, '--once', '--exec', `echo start >> ${log}; sleep 15; echo end >> ${log}`], host);
      await runner.waitStderr(/^SUBSCRIBED remote runner/m);
      expect((await runBin('mam-remote', ['dispatch', '--job', id, '--session', session], delegator)).code).toBe(0);
      const [from, to] = windows[round - 1]!;
      const delay = rng.int(from, to);
      delays.push(delay);
      await sleep(delay);
      const close = await runBin('mam-close', ['--job', id, '--request', 'cancelled'], delegator);
      expect(close.code, close.stderr).toBe(0);
      const t0 = Date.now();
      const timer = setTimeout(() => runner.kill(), 20_000);
      const res = await runner.done;
      clearTimeout(timer);
      const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
      if (text.includes('start')) agentStarted++;
      expect(res.code, `round ${round} (cancel after ${delay} ms): ${res.stderr.slice(-1_000)}`).toBe(1);
      // SIGTERM, then SIGKILL after 5 s (contract §6): within seconds either way.
      expect(Date.now() - t0, `round ${round}: runner took too long after the cancel`).toBeLessThan(10_000);
      expect(text).not.toContain('end');
      expect(recordOf(host, id).status).toBe('cancelled');
      const terminal = auditOf(host, id).filter((l) => l.type === 'published' && (l.event === 'completed' || l.event === 'error'));
      expect(terminal).toEqual([]);
    }
    report({
      fault: "the delegator's cancel at a random moment of a remote job (0–2 s after dispatch)",
      injected: ROUNDS,
      checked: `cancels after ${delays.join('/')} ms (agent had started in ${agentStarted}): the agent never ran to its end, the runner exited 1 within 10 s, its record cancelled, no terminal event published`,
      result: 'pass',
    });
  });
});
