import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it, onTestFinished } from 'vitest';
import { shellQuote } from '../../src/core/bin-path.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT, makeWorkspace, runBinAsync } from '../helpers/cli.ts';
import { makeTempDir } from '../helpers/temp-dir.ts';
import { describeWithTmux, isolatedTmux } from './tmux-fixtures.ts';

/**
 * `mam delegate --pane tmux` end to end: a real tmux server (the test's own), a real broker, the
 * real bins. The agent reads its prompt from the pane's terminal and reports through
 * $MAM_PUBLISH_CMD; MAM follows it through the events alone.
 */
describeWithTmux('mam delegate --pane tmux', () => {
  let broker: TestBroker;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  it('runs the agent in a session named after the job, types the prompt, follows the events, closes the session', async () => {
    const tmux = isolatedTmux();
    const out = makeTempDir('mam-pane-agent-');
    onTestFinished(() => out.cleanup());
    const ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    onTestFinished(() => ws.cleanup());
    const seen = path.join(out.path, 'seen');
    // The first line typed into the terminal, beside the first line of the prompt MAM wrote.
    const agent = [
      'IFS= read -r first',
      `printf '%s\\n%s\\n' "$first" "$(head -n1 "$MAM_JOB_PROMPT_FILE")" > ${shellQuote(seen)}`,
      `STEPS=1 STEP_SECONDS=0 exec ${shellQuote(path.join(REPO_ROOT, 'examples/fake-agent.sh'))}`,
    ].join('; ');
    const result = await runBinAsync('mam', ['delegate', '--json', '--pane', 'tmux', '--exec', agent, '--brief', 'pane job'], ws, {
      env: { TMUX_TMPDIR: tmux.dir },
      timeoutMs: 60_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const events = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).event);
    expect(events).toEqual(['started', 'progress', 'completed']);
    const jobId = /job (\S+) registered/.exec(result.stderr)?.[1];
    expect(jobId).toBeDefined();
    expect(result.stderr).toContain(`tmux session mam-${jobId}; watch it with: tmux attach -t mam-${jobId}`);
    const [typed, written] = readFileSync(seen, 'utf8').split('\n');
    expect(typed).toBe(written);
    expect(typed).toBe('# Before you start: report your progress with MAM');
    // The job closed: its session is gone.
    expect(tmux.tmux('has-session', '-t', `=mam-${jobId}`).code).not.toBe(0);
  });
});

it('without tmux: one line saying what to install, exit 1, and no job registered', async () => {
  const emptyPath = makeTempDir('mam-empty-path-');
  onTestFinished(() => emptyPath.cleanup());
  // A port nothing listens on: were tmux found after all, the job would fail, not reach a real broker.
  const ws = makeWorkspace({ PATH: emptyPath.path, MQTT_BROKER: '127.0.0.1', MQTT_PORT: '9' });
  onTestFinished(() => ws.cleanup());
  const result = await runBinAsync('mam', ['delegate', '--pane', 'tmux', '--exec', 'true', '--brief', 'x', '--no-embedded-broker'], ws);
  expect(result.code).toBe(1);
  expect(result.stderr.trim().split('\n')).toEqual(['ERROR: --pane tmux: tmux is not installed (apt install tmux)']);
  const jobs = await runBinAsync('mam', ['jobs', '--json'], ws);
  expect(jobs.code).toBe(0);
  expect(jobs.stdout.trim()).toBe('[]');
});
