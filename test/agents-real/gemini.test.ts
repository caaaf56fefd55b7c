import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { delegate, describeRun, names } from './delegate-run.ts';
import { describeWithCli } from './real-clis.ts';
import { ERROR_TEXT, type Scenario, preambleCommand } from './scenario.ts';
import { realCliWorld } from './real-cli-world.ts';

describeWithCli('gemini', 'the real Gemini CLI under mam delegate --agent gemini, against a scripted Gemini API', () => {
  const world = realCliWorld();

  const setup = (scenario: Scenario) => world.setup('gemini', scenario);
  const log = (label: string, run: Parameters<typeof describeRun>[1]) => process.stderr.write(`${describeRun(`gemini ${label}`, run)}\n`);

  /** The function responses Gemini sent back (its tools' results, as the model saw them). */
  const toolResponses = (): string[] =>
    world.model.requests.flatMap((r) =>
      ((r.body as { contents?: { parts: { functionResponse?: unknown }[] }[] }).contents ?? []).flatMap((c) =>
        c.parts.filter((p) => p.functionResponse !== undefined).map((p) => JSON.stringify(p.functionResponse)),
      ),
    );

  it('a text reply: started before it, completed by its exit code 0 (the wrapper)', async () => {
    const env = await setup([{ text: 'Nothing to change.' }]);
    const run = await delegate(world.ws, ['--agent', 'gemini', '--brief', 'Say hello.'], env);
    log('text reply', run);
    expect(run.code, run.stderr).toBe(0);
    expect(names(run)).toEqual(['started', 'completed']);
    expect(run.events.map((e) => e.detail)).toEqual(['Agent started', 'Agent finished']);
    expect(JSON.stringify(world.model.requests.at(-1)!.body)).toContain('Say hello.');
  });

  it("a shell call (the preamble's lines, or one that needs permission): headless Gemini has no such tool, the model is told so", async () => {
    const env = await setup([
      { shell: (prompt) => preambleCommand(prompt, 'progress', 'read the code') },
      { shell: 'touch made-by-the-agent.txt' },
      { text: 'Could not.' },
    ]);
    const run = await delegate(world.ws, ['--agent', 'gemini', '--brief', 'Report as you go.'], env);
    log('shell calls', run);
    expect(run.code, run.stderr).toBe(0);
    expect(names(run)).toEqual(['started', 'completed']);
    expect(existsSync(path.join(world.ws.root, 'made-by-the-agent.txt'))).toBe(false);
    const responses = toolResponses();
    expect(responses.length).toBeGreaterThan(0);
    for (const response of responses) expect(response).toContain('Tool \\"run_shell_command\\" not found');
  });

  it.each(['bad_request', 'overloaded'] as const)('an API error (%s) mid-run: error by the exit code, promptly, exit 1', async (kind) => {
    const env = await setup([{ shell: 'echo step one' }, { error: kind }]);
    const run = await delegate(world.ws, ['--agent', 'gemini', '--brief', 'Work.'], env);
    log(`API error ${kind}`, run);
    expect(run.code, run.stderr).toBe(1);
    expect(names(run)).toEqual(['started', 'error']);
    expect(run.events[1]!.detail).toMatch(/^Agent exited with code [1-9]/);
    expect(run.stderr).toContain(ERROR_TEXT[kind]);
    expect(run.events[1]!.atMs).toBeLessThan(30_000);
  });

  it('a model that never answers: started, beating, until the wall-clock budget: exit 2', async () => {
    const env = await setup([{ hang: true }]);
    const run = await delegate(world.ws, ['--agent', 'gemini', '--brief', 'Work.', '--heartbeat', '1', '--timeout', '5'], env);
    log('model hangs', run);
    expect(run.code, run.stderr).toBe(2);
    expect(names(run)).toEqual(['started']);
    expect(run.stderr).toMatch(/closed error \(deadline_timeout\)/);
  });
});
