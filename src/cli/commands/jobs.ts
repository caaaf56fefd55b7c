import * as z from 'zod/mini';
import { JOB_STATUSES } from '../../core/vocabulary.ts';
import { type JobRecord, publicView } from '../../core/registry/job-record.ts';

import { parseOptions } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';
import { formatTable } from '../table.ts';

const jobsOptions = z.object({
  json: z.optional(z.boolean()),
  status: z.optional(z.enum(JOB_STATUSES)),
  registry: z.optional(z.string()),
});

function ago(iso: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 90) return `${s}s ago`;
  if (s < 5400) return `${Math.round(s / 60)}m ago`;
  if (s < 129600) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

/** A fixed-width table for people; the brief is cut to its first line. */
export function formatJobsTable(records: JobRecord[], now = Date.now()): string {
  const rows = records.map((r) => [
    r.job_id,
    r.status,
    r.agent_session ?? '-',
    String(r.attempt_id),
    String(r.last_seq),
    ago(r.updated_at, now),
    (r.brief.split('\n')[0] ?? '').slice(0, 60),
  ]);
  const header = ['JOB', 'STATUS', 'SESSION', 'ATTEMPT', 'SEQ', 'UPDATED', 'BRIEF'];
  return formatTable(header, rows);
}

export const jobsCommand = defineCommand({
  name: 'jobs',
  summary: 'list jobs: a table, or a JSON array with --json',
  examples: [
    ['every job, one line each', ''],
    ['the ids of failed jobs, for a script', "--json --status error | jq -r '.[].job_id'"],
  ],
  configure: (cmd) =>
    registryOption(cmd).option('--json', 'print a JSON array of records (without tokens)').option('--status <status>', 'only jobs with this status'),
  parse: (raw) => parseOptions(jobsOptions, raw),
  async run(opts, ctx) {
    const registry = ctx.registry();
    const { records, corrupt } = registry.list();
    for (const err of corrupt) ctx.warn(`${err.message}; skipped`);
    const shown = opts.status ? records.filter((r) => r.status === opts.status) : records;
    if (opts.json) ctx.io.out.write(`${JSON.stringify(shown.map(publicView))}\n`);
    else if (shown.length > 0) ctx.io.out.write(`${formatJobsTable(shown)}\n`);
    else ctx.io.err.write('no jobs\n');
  },
});
