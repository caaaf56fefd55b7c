import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { delegate, describeRun, names } from './delegate-run.ts';
import type { ModelServer } from './model-server.ts';
import { describeWithCli } from './real-clis.ts';
import { ERROR_TEXT, type Scenario, preambleCommand } from './scenario.ts';
import { realCliWorld } from './real-cli-world.ts';

/** Claude's requests, as the scripted model received them: the Messages API bodies. */
type Block = { type: string; content?: unknown; is_error?: boolean };
type MessagesBody = { messages: { role: string; content: string | Block[] }[] };
const toolResults = (server: ModelServer): Block[] =>
  server.requests.flatMap((r) => {
    const content = (r.body as MessagesBody).messages.at(-1)?.content;
    return typeof content === 'string' || content === undefined ? [] : content.filter((c) => c.type === 'tool_result');
  });

describeWithCli('claude', 'the real Claude Code under mam delegate --agent claude, against a scripted Messages API', () => {
  const world = realCliWorld();

  /** A workspace, the model playing `scenario`, and the environment that runs the real `claude` against it. */
  const setup = (scenario: Scenario) => world.setup('claude', scenario);
  const log = (label: string, run: Parameters<typeof describeRun>[1]) => process.stderr.write(`${describeRun(`claude ${label}`, run)}\n`);

  it('a text reply: started (SessionStart hook), completed (Stop hook), exit 0', async () => {
    const env = await setup([{ text: 'Nothing to change.' }]);
    const run = await delegate(world.ws, ['--agent', 'claude', '--brief', 'Say hello.'], env);
    log('text reply', run);
    expect(run.code, run.stderr).toBe(0);
    expect(names(run)).toEqual(['started', 'completed']);
    expect(run.events.map((e) => e.detail)).toEqual(['Claude Code session started', 'Claude Code finished']);
    // The prompt Claude sent the model is MAM's: the preamble, then the brief.
    const prompt = JSON.stringify((world.model.requests[0]!.body as MessagesBody).messages[0]);
    expect(prompt).toContain('Before you start: report your progress with MAM');
    expect(prompt).toContain('Say hello.');
  });

  it("the preamble's publish lines run through Bash (each approved): its own progress and completed, the Stop hook adds nothing", async () => {
    const env = await setup([
      { shell: (prompt) => preambleCommand(prompt, 'progress', 'read the code') },
      { shell: (prompt) => preambleCommand(prompt, 'completed', 'all done') },
      { text: 'Reported.' },
    ]);
    const run = await delegate(world.ws, ['--agent', 'claude', '--brief', 'Report as you go.'], env, 'approve');
    log('preamble lines', run);
    expect(run.code, run.stderr).toBe(0);
    expect(names(run)).toEqual(['started', 'permission_required', 'progress', 'permission_required', 'completed']);
    expect(run.events.filter((e) => e.event !== 'permission_required').map((e) => e.detail)).toEqual([
      'Claude Code session started',
      'read the code',
      'all done',
    ]);
    expect(run.answers).toEqual([0, 0]);
  });

  it('a tool that needs permission, approved: the tool runs and the job completes', async () => {
    const env = await setup([{ shell: 'touch made-by-the-agent.txt' }, { text: 'Made the file.' }]);
    const run = await delegate(world.ws, ['--agent', 'claude', '--brief', 'Make the file.'], env, 'approve');
    log('permission approved', run);
    expect(run.code, run.stderr).toBe(0);
    expect(names(run)).toEqual(['started', 'permission_required', 'completed']);
    expect(run.events[1]!.data?.permission).toMatchObject({ tool: 'Bash', summary: 'touch made-by-the-agent.txt', awaits_decision: true });
    expect(run.answers).toEqual([0]);
    expect(existsSync(path.join(world.ws.root, 'made-by-the-agent.txt'))).toBe(true);
    expect(toolResults(world.model)).toEqual([expect.objectContaining({ is_error: false })]);
  });

  it('a tool that needs permission, denied: the tool does not run, Claude is told why, and its turn ends completed', async () => {
    const env = await setup([{ shell: 'touch made-by-the-agent.txt' }, { text: 'I was not allowed to.' }]);
    const run = await delegate(world.ws, ['--agent', 'claude', '--brief', 'Make the file.'], env, 'deny');
    log('permission denied', run);
    expect(run.code, run.stderr).toBe(0);
    expect(names(run)).toEqual(['started', 'permission_required', 'completed']);
    expect(existsSync(path.join(world.ws.root, 'made-by-the-agent.txt'))).toBe(false);
    const [result] = toolResults(world.model);
    expect(result?.is_error).toBe(true);
    expect(JSON.stringify(result?.content)).toContain('not this one, says the test');
  });

  // Claude's own class of the error: a bare 400 is `unknown` to 2.1.332, a 529 after its retries `server_error`.
  it.each([
    ['bad_request', 'unknown'],
    ['overloaded', 'server_error'],
  ] as const)('an API error (%s) mid-run: error at once, with the CLI’s own text (StopFailure), exit 1', async (kind, claudeError) => {
    const env = await setup([{ shell: 'echo step one' }, { error: kind }]);
    const run = await delegate(world.ws, ['--agent', 'claude', '--brief', 'Work.', '--heartbeat', '30'], env);
    log(`API error ${kind}`, run);
    expect(run.code, run.stderr).toBe(1);
    expect(names(run)).toEqual(['started', 'error']);
    const detail = run.events[1]!.detail;
    expect(detail).toContain(`Claude Code stopped on an API error (${claudeError})`);
    if (kind === 'bad_request') expect(detail).toContain(ERROR_TEXT.bad_request);
    else expect(detail).toMatch(/529|[Oo]verloaded/);
    // Far below the idle timeout (4 × 30 s): the error is the StopFailure hook's, not a silence.
    expect(run.events[1]!.atMs).toBeLessThan(15_000);
  });

  it('a gateway failing with 500 after an approval: Claude retries with backoff (so a job looks stuck, heartbeating); with fewer retries it ends in error', async () => {
    // The issue's "approved, then nothing until the timeout": Claude 2.1.332 retries a 500 about ten
    // times over minutes (0.6, 1.2, 2, 4.7, 8.5, 18.6 s … between tries, measured), alive and beating.
    // CLAUDE_CODE_MAX_RETRIES bounds it; then StopFailure, and MAM's error, come at once.
    const env = await setup([{ shell: 'touch made-by-the-agent.txt' }, { error: 'server_error' }]);
    const run = await delegate(world.ws, ['--agent', 'claude', '--brief', 'Make the file.'], { ...env, CLAUDE_CODE_MAX_RETRIES: '1' }, 'approve');
    log('500 after approval', run);
    expect(run.code, run.stderr).toBe(1);
    expect(names(run)).toEqual(['started', 'permission_required', 'error']);
    expect(run.events[2]!.detail).toContain(ERROR_TEXT.server_error);
    expect(existsSync(path.join(world.ws.root, 'made-by-the-agent.txt'))).toBe(true);
    // The request after the tool's result, and one retry of it.
    expect(toolResults(world.model)).toHaveLength(2);
  });

  it('a model that never answers: the job stays alive on its heartbeat until the wall-clock budget, then exit 2 and the agent is stopped', async () => {
    const env = await setup([{ hang: true }]);
    const run = await delegate(world.ws, ['--agent', 'claude', '--brief', 'Work.', '--heartbeat', '1', '--timeout', '5'], env);
    log('model hangs', run);
    expect(run.code, run.stderr).toBe(2);
    // The close is the delegate's own (on stderr); the agent said only `started`, then beat.
    expect(names(run)).toEqual(['started']);
    expect(run.stderr).toMatch(/closed error \(deadline_timeout\)/);
    expect(run.ms).toBeLessThan(15_000);
  });
});
