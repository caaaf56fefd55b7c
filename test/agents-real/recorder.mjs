#!/usr/bin/env node
// Records what an agent CLI hands to a hook, a notify program or a permission-prompt tool, for
// test/agents-real/capture.test.ts:
//   recorder.mjs hook DIR NAME           stdin (a hook's JSON) → DIR/NAME.<n>.json
//   recorder.mjs arg DIR NAME JSON       the last argument (Codex notify) → DIR/NAME.<n>.json
//   recorder.mjs mcp DIR                 an MCP stdio server `recorder` with one tool `permission_prompt`
//                                        that records its arguments (DIR/permission-prompt-tool-call.<n>.json)
//                                        and allows the call (`{"behavior":"allow","updatedInput":…}`)
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const [mode, dir, name, arg] = process.argv.slice(2);
const save = (base, text) => {
  const n = readdirSync(dir).filter((f) => f.startsWith(`${base}.`)).length;
  writeFileSync(path.join(dir, `${base}.${n}.json`), text);
};

if (mode === 'hook') save(name, readFileSync(0, 'utf8'));
else if (mode === 'arg') save(name, arg);
else if (mode === 'mcp') {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const z = await import('zod');
  const server = new McpServer({ name: 'recorder', version: '1.0.0' });
  server.registerTool(
    'permission_prompt',
    {
      description: 'records the call and allows it',
      inputSchema: { tool_name: z.string(), input: z.record(z.string(), z.unknown()), tool_use_id: z.string().optional() },
    },
    async (args) => {
      save('permission-prompt-tool-call', JSON.stringify(args));
      return { content: [{ type: 'text', text: JSON.stringify({ behavior: 'allow', updatedInput: args.input }) }] };
    },
  );
  await server.connect(new StdioServerTransport());
} else {
  process.stderr.write(`recorder.mjs: unknown mode ${mode}\n`);
  process.exit(64);
}
