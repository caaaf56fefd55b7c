import * as z from 'zod/mini';
import { CorruptRecord, NoSuchJob } from '../../core/errors.ts';
import { type MamPane, closeFinishedPanes, listMamPanes } from '../../core/panes/mam-panes.ts';
import type { Registry } from '../../core/registry/registry.ts';
import { isTerminalStatus } from '../../core/vocabulary.ts';
import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';
import { formatTable } from '../table.ts';

const sessionsOptions = z.object({
  json: z.optional(z.boolean()),
  registry: z.optional(z.string()),
});

/** A pane and what the registry says of its job. */
export interface SessionRow extends MamPane {
  /** The job's status from the registry; `unknown` when its record is gone (or unreadable). */
  status: string;
}

function jobStatus(registry: Registry, jobId: string): string {
  try {
    return registry.read(jobId).status;
  } catch (err) {
    if (err instanceof NoSuchJob || err instanceof CorruptRecord) return 'unknown';
    throw err;
  }
}

/** What the pane's process did, from tmux's state: the job's status is the registry's, not this. */
function agentState(pane: MamPane): string {
  if (!pane.dead) return 'running';
  if (pane.exitSignal) return `killed (${pane.exitSignal})`;
  return pane.exitStatus === null ? 'exited' : `exited (${pane.exitStatus})`;
}

export function formatSessionsTable(rows: SessionRow[]): string {
  const header = ['SESSION', 'JOB', 'STATUS', 'AGENT', 'CREATED', 'ATTACH'];
  const cells = rows.map((r) => [r.session, r.jobId, r.status, agentState(r), r.created.replace(/\.\d+Z$/, 'Z'), r.attach]);
  return formatTable(header, cells);
}

/** One JSON line per pane, in the registry's snake_case. */
function jsonLine(r: SessionRow): string {
  return JSON.stringify({
    session: r.session,
    job_id: r.jobId,
    status: r.status,
    pid: r.pid,
    dead: r.dead,
    exit_status: r.exitStatus,
    exit_signal: r.exitSignal,
    created: r.created,
    attach: r.attach,
  });
}

export const sessionsCommand = defineCommand({
  name: 'sessions',
  summary: "list the tmux sessions MAM started, with their job's status and how to attach",
  examples: [
    ["the tmux sessions of MAM's agents, with how to attach", ''],
    ['the sessions whose agent has ended', "--json | jq -r 'select(.dead) | .session'"],
  ],
  configure: (cmd) => registryOption(cmd).option('--json', 'one JSON object per line'),
  parse: (raw) => parseOptions(sessionsOptions, raw),
  async run(opts, ctx) {
    const registry = ctx.registry();
    // Panes of finished jobs whose delegate died before closing them go now (docs/panes.md).
    const panes = await closeFinishedPanes(await listMamPanes({ env: ctx.env }), (jobId) => isTerminalStatus(jobStatus(registry, jobId)), { env: ctx.env });
    const rows = panes.map((p) => ({ ...p, status: jobStatus(registry, p.jobId) }));
    if (opts.json) {
      if (rows.length > 0) ctx.io.out.write(`${rows.map(jsonLine).join('\n')}\n`);
    } else if (rows.length > 0) ctx.io.out.write(`${formatSessionsTable(rows)}\n`);
    else ctx.io.err.write('no MAM tmux sessions\n');
  },
});
