import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { binPath } from '../helpers/cli.ts';
import { waitUntil } from '../helpers/wait.ts';
import { type Side, auditLine, brokerSide, mam, oneLine, permissionPublished, registerJob } from './control-fixtures.ts';

/**
 * `mam mcp-permission` as Claude Code runs it (`--permission-prompt-tool mcp__mam__permission_prompt`),
 * with the official MCP SDK client as the peer: it spawns the built bin over stdio, lists the tool,
 * and calls it with the arguments Claude sends (test/fixtures/agents/claude-permission-prompt-tool-call.json).
 */

const CALL = JSON.parse(readFileSync(new URL('../fixtures/agents/claude-permission-prompt-tool-call.json', import.meta.url), 'utf8')) as {
  tool_name: string;
  input: Record<string, unknown>;
  tool_use_id: string;
};

interface Connected {
  client: Client;
  stderr: () => string;
  errors: Error[];
  pid: number;
}

/** The SDK's stdio client passes only HOME/LOGNAME/PATH/SHELL/TERM/USER on its own: the workspace's env goes in explicitly. */
async function connect(side: Side, id: string, ...args: string[]): Promise<Connected> {
  const env = Object.fromEntries(Object.entries(side.ws.env).filter((e): e is [string, string] => e[1] !== undefined));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [binPath('mam'), 'mcp-permission', '--job', id, ...args],
    env,
    cwd: side.ws.root,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const client = new Client({ name: 'mam-test', version: '0.0.0' });
  const errors: Error[] = [];
  // Anything on the server's stdout that is not MCP ends up here.
  client.onerror = (err) => errors.push(err);
  await client.connect(transport);
  onTestFinished(() => client.close());
  return { client, stderr: () => stderr, errors, pid: transport.pid! };
}

function decisionOf(result: unknown): Record<string, unknown> {
  const content = (result as { content: Array<{ type: string; text: string }> }).content;
  expect(content).toHaveLength(1);
  expect(content[0]!.type).toBe('text');
  return JSON.parse(content[0]!.text) as Record<string, unknown>;
}

describe('mam mcp-permission with the MCP SDK client', () => {
  let broker: TestBroker;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  it('lists one tool, permission_prompt; a call publishes permission_required, `mam approve` answers, Claude gets allow with its input', async () => {
    const id = 'ac000001';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const { client, errors, stderr } = await connect(side, id);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['permission_prompt']);
    expect(tools[0]!.inputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['tool_name', 'input']) });

    const call = client.callTool({ name: 'permission_prompt', arguments: CALL });
    const req = await permissionPublished(side, id);
    // CALL is what the real Claude Code 2.1.332 sent (test/fixtures/agents/claude-permission-prompt-tool-call.json).
    expect(req.payload).toMatchObject({
      detail: 'Permission needed: Bash',
      data: { permission: { tool: 'Bash', summary: 'touch captured.txt', tool_use_id: CALL.tool_use_id } },
    });
    const approve = await mam(side, 'approve', '--job', id);
    expect(approve.code).toBe(0);
    expect(decisionOf(await call)).toEqual({ behavior: 'allow', updatedInput: CALL.input });
    expect(await auditLine(side, id, (l) => l.type === 'decision_received')).toMatchObject({ request_seq: req.seq, decision: 'allow' });
    expect(errors).toEqual([]);
    expect(stderr()).toBe('');
  });

  it('deny: the operator’s reason becomes the message', async () => {
    const id = 'ac000002';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const { client } = await connect(side, id);
    const call = client.callTool({ name: 'permission_prompt', arguments: { tool_name: 'Bash', input: { command: 'rm -rf build' } } });
    const req = await permissionPublished(side, id);
    expect(req.payload).toMatchObject({ data: { permission: { tool: 'Bash', summary: 'rm -rf build' } } });
    expect((await mam(side, 'deny', '--job', id, '--reason', 'keep the build')).code).toBe(0);
    expect(decisionOf(await call)).toEqual({ behavior: 'deny', message: 'keep the build' });
  });

  it('nobody answers within --timeout: deny (fail closed)', async () => {
    const id = 'ac000003';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const { client } = await connect(side, id, '--timeout', '1');
    const result = decisionOf(await client.callTool({ name: 'permission_prompt', arguments: CALL }));
    expect(result).toEqual({ behavior: 'deny', message: expect.stringMatching(/no decision within 1 s/) });
    expect(await auditLine(side, id, (l) => l.type === 'decision_defaulted')).toMatchObject({ by: 'timeout', decision: 'deny' });
  });

  it('a request the registry refuses (terminal job) is a deny, never an allow', async () => {
    const id = 'ac000004';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const { client } = await connect(side, id);
    await side.registry.close(id, 'cancelled');
    const result = decisionOf(await client.callTool({ name: 'permission_prompt', arguments: CALL }));
    expect(result).toEqual({ behavior: 'deny', message: expect.stringMatching(/job is already cancelled/) });
  });

  it('a call the client cancels is withdrawn and audited as settled: `mam approve` then finds nothing waiting', async () => {
    const id = 'ac000006';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const { client } = await connect(side, id);
    const cancel = new AbortController();
    const call = client.callTool({ name: 'permission_prompt', arguments: CALL }, undefined, { signal: cancel.signal });
    const req = await permissionPublished(side, id);
    cancel.abort('the user interrupted');
    await expect(call).rejects.toThrow();
    expect(await auditLine(side, id, (l) => l.type === 'decision_defaulted')).toMatchObject({ request_seq: req.seq, by: 'withdrawn' });
    expect((await mam(side, 'approve', '--job', id)).code).toBe(1);
  });

  it('ends when the client goes away; an unknown job is refused before any MCP (exit 66, stdout empty)', async () => {
    const id = 'ac000005';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const { client, pid } = await connect(side, id);
    await client.close();
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(await waitUntil(() => !alive(), 5_000)).toBe(true);

    const unknown = await mam(side, 'mcp-permission', '--job', 'ac0000ff');
    expect(unknown.code).toBe(66);
    expect(unknown.stdout).toBe('');
    expect(oneLine(unknown.stderr)).toBe('ERROR: no such job: ac0000ff');
  });
});
