import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { delegate, describeRun, names } from './delegate-run.ts';
import { describeWithCli } from './real-clis.ts';
import { ERROR_TEXT, type Scenario, preambleCommand } from './scenario.ts';
import { realCliWorld } from './real-cli-world.ts';

describeWithCli('codex', 'the real Codex CLI under mam delegate --agent codex, against a scripted Responses API', () => {
  const world = realCliWorld();

  // `codex exec` runs only in a git repository or a folder trusted in its config (else exit 1).
  const setup = (scenario: Scenario) => world.setup('codex', scenario, { gitRepository: true });
  const log = (label: string, run: Parameters<typeof describeRun>[1]) => process.stderr.write(`${describeRun(`codex ${label}`, run)}\n`);

  /** What Codex's tools returned, as the model received it (the Responses API's function_call_output items). */
  const toolOutputs = (): string[] =>
    world.model.requests.flatMap((r) =>
      (r.body as { input: { type?: string; output?: unknown }[] }).input.filter((i) => i.type === 'function_call_output').map((i) => String(i.output)),
    );
  const unique = (xs: string[]) => [...new Set(xs)];

  it('a text reply: started (the wrapper), completed (notify, end of the turn), exit 0', async () => {
    const env = await setup([{ text: 'Nothing to change.' }]);
    const run = await delegate(world.ws, ['--agent', 'codex', '--brief', 'Say hello.'], env);
    log('text reply', run);
    expect(run.code, run.stderr).toBe(0);
    expect(names(run)).toEqual(['started', 'completed']);
    // notify is fire-and-forget: the wrapper's exit hook may say it first.
    expect(run.events[0]!.detail).toBe('Agent started');
    expect(run.events[1]!.detail).toMatch(/^(Codex finished its turn|Agent finished)$/);
    expect(JSON.stringify(world.model.requests[0]!.body)).toContain('Say hello.');
  });

  it("the preamble's publish lines fail in Codex's default read-only sandbox (EROFS); the job still ends by notify", async () => {
    const env = await setup([
      { shell: (prompt) => preambleCommand(prompt, 'progress', 'read the code') },
      { shell: (prompt) => preambleCommand(prompt, 'completed', 'all done') },
      { text: 'Reported.' },
    ]);
    const run = await delegate(world.ws, ['--agent', 'codex', '--brief', 'Report as you go.'], env);
    log('preamble lines', run);
    expect(run.code, run.stderr).toBe(0);
    expect(names(run)).toEqual(['started', 'completed']);
    // notify is fire-and-forget: the wrapper's exit hook may say it first.
    expect(run.events[1]!.detail).toMatch(/^(Codex finished its turn|Agent finished)$/);
    const outputs = unique(toolOutputs());
    expect(outputs).toHaveLength(2);
    for (const output of outputs) expect(output).toMatch(/Process exited with code 1[\s\S]*EROFS: read-only file system/);
  });

  it('a command that needs more than the sandbox allows: `codex exec` never asks (approval "never"), no permission_required, the command fails', async () => {
    const env = await setup([{ shell: 'touch made-by-the-agent.txt' }, { text: 'Could not.' }]);
    const run = await delegate(world.ws, ['--agent', 'codex', '--brief', 'Make the file.'], env);
    log('needs permission', run);
    expect(run.code, run.stderr).toBe(0);
    expect(names(run)).toEqual(['started', 'completed']);
    expect(existsSync(path.join(world.ws.root, 'made-by-the-agent.txt'))).toBe(false);
    expect(unique(toolOutputs())).toEqual([expect.stringMatching(/Read-only file system|Process exited with code 1/)]);
  });

  it.each(['bad_request', 'overloaded'] as const)('an API error (%s) mid-run: error by the exit code, promptly, exit 1', async (kind) => {
    const env = await setup([{ shell: 'echo step one' }, { error: kind }]);
    const run = await delegate(world.ws, ['--agent', 'codex', '--brief', 'Work.'], env);
    log(`API error ${kind}`, run);
    expect(run.code, run.stderr).toBe(1);
    expect(names(run)).toEqual(['started', 'error']);
    expect(run.events[1]!.detail).toMatch(/^Agent exited with code [1-9]/);
    // Codex prints the API's own message on stderr (the delegate passes it through).
    expect(run.stderr).toContain(ERROR_TEXT[kind]);
    expect(run.events[1]!.atMs).toBeLessThan(20_000);
  });

  it('a model that never answers: started, beating, until the wall-clock budget: exit 2', async () => {
    const env = await setup([{ hang: true }]);
    const run = await delegate(world.ws, ['--agent', 'codex', '--brief', 'Work.', '--heartbeat', '1', '--timeout', '5'], env);
    log('model hangs', run);
    expect(run.code, run.stderr).toBe(2);
    expect(names(run)).toEqual(['started']);
    expect(run.stderr).toMatch(/closed error \(deadline_timeout\)/);
  });
});
