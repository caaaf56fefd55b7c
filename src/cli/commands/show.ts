import * as z from 'zod/mini';
import { publicView } from '../../core/registry/job-record.ts';
import { closeSync, constants, openSync, readFileSync } from 'node:fs';
import { NO_FOLLOW } from '../../core/private-places.ts';
import { jobIdFlag } from '../flags.ts';
import { parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';

const showOptions = z.object({ job: jobIdFlag, registry: z.optional(z.string()), json: z.optional(z.boolean()), events: z.optional(z.boolean()) });

/** The file's text, never through a symbolic link; undefined when there is none. */
function readKept(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | NO_FOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

export const showCommand = defineCommand({
  name: 'show',
  summary: "print one job's record (without its token)",
  examples: [
    ["one job's record (no token)", '--job 3f2a9c1d'],
    ['its status only', '--job 3f2a9c1d | jq -r .status'],
    ['the events its watcher printed, once it has ended', '--job 3f2a9c1d --events'],
  ],
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--job <id>', 'job id')
      .option('--json', 'print the record as JSON (the default)')
      .option('--events', 'print the events its watcher printed (mam delegate keeps them beside the job), one JSON line each'),
  parse: (raw) => parseOptions(showOptions, raw),
  async run(opts, ctx) {
    const registry = ctx.registry();
    const record = registry.read(opts.job);
    if (!opts.events) {
      printJson(ctx.io.out, publicView(record));
      return;
    }
    // The watcher's own lines, as it printed them; a job nobody watched with mam delegate has none.
    const kept = readKept(registry.paths.subscriberOut(opts.job));
    if (kept === undefined) ctx.warn(`job ${opts.job}: no watcher output kept (it was not run by mam delegate)`);
    else ctx.io.out.write(kept);
  },
});
