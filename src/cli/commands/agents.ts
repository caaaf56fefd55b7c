import * as z from 'zod/mini';
import { warnIfPublicSandbox } from '../context.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';
import { formatTable } from '../table.ts';

const agentsOptions = z.object({
  json: z.optional(z.boolean()),
  registry: z.optional(z.string()),
});

export const agentsCommand = defineCommand({
  name: 'agents',
  summary: 'list the fleet: name, host, capabilities, online/offline/stale, last_seen, current job',
  examples: [
    ['who is online, and on which job', ''],
    ['the names of agents that can review, for a script', '--json | jq -r \'.[] | select(.status == "online" and (.capabilities | index("review"))) | .name\''],
  ],
  configure: (cmd) => registryOption(cmd).option('--json', 'one JSON array instead of a table'),
  parse: (raw) => parseOptions(agentsOptions, raw),
  async run(opts, ctx) {
    const config = ctx.config();
    const registry = ctx.registry();
    await warnIfPublicSandbox(ctx);
    const { readPresence, agentRows } = await import('../../core/fleet/presence-reader.ts');
    const rows = agentRows(await readPresence(config), registry);
    if (opts.json) {
      ctx.io.out.write(`${JSON.stringify(rows)}\n`);
      return;
    }
    const cells = rows.map((r) => [
      r.name,
      r.host,
      r.reason ? `${r.status} (${r.reason})` : r.status,
      r.last_seen,
      r.current_job ?? '-',
      r.capabilities.join(',') || '-',
    ]);
    ctx.io.out.write(`${formatTable(['NAME', 'HOST', 'STATUS', 'LAST_SEEN', 'JOB', 'CAPABILITIES'], cells)}\n`);
  },
});
