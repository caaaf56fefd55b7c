import * as z from 'zod/mini';
import { warnIfPublicSandbox } from '../context.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const agentsOptions = z.object({
  json: z.optional(z.boolean()),
  registry: z.optional(z.string()),
});

export const agentsCommand = defineCommand({
  name: 'agents',
  summary: 'list the fleet: name, host, capabilities, online/offline/stale, last_seen, current job',
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
    const table = [
      ['NAME', 'HOST', 'STATUS', 'LAST_SEEN', 'JOB', 'CAPABILITIES'],
      ...rows.map((r) => [
        r.name,
        r.host,
        r.reason ? `${r.status} (${r.reason})` : r.status,
        r.last_seen,
        r.current_job ?? '-',
        r.capabilities.join(',') || '-',
      ]),
    ];
    const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
    ctx.io.out.write(`${table.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n')}\n`);
  },
});
