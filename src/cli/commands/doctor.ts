import * as z from 'zod/mini';
import { AGENT_NAMES } from '../../core/agents/presets.ts';
import { parseOptions } from '../options.ts';
import { defineCommand } from '../program.ts';

const agentList = z
  .string()
  .check(
    z.refine(
      (s) => s.split(',').every((a) => AGENT_NAMES.includes(a.trim() as never) && a.trim() !== 'shell'),
      'expected agent names: claude, codex, gemini, aider',
    ),
  );
const doctorOptions = z.object({ agent: z.optional(agentList) });

/**
 * `mam doctor [--agent claude,codex]`: one line per check (agent CLIs, broker, secrets), exit 0 only
 * when all is well, 1 otherwise. The checks are src/core/doctor/'s; this prints them.
 */
export const doctorCommand = defineCommand({
  name: 'doctor',
  summary: 'check this machine: agent CLIs (version, preset flags), broker, secrets; exit 0 only when all is well',
  examples: [
    ['is this machine ready for MAM? (exit 0: all is well)', ''],
    ['Claude Code and Codex must be installed; the others are only noted', '--agent claude,codex'],
  ],
  configure: (cmd) => cmd.option('--agent <names>', 'agents that must be installed (comma-separated); others missing are only noted'),
  parse: (raw) => parseOptions(doctorOptions, raw),
  async run(opts, ctx) {
    const { runDoctor, formatCheck, allWell } = await import('../../core/doctor/doctor.ts');
    const checks = await runDoctor(ctx.config(), { env: ctx.env, required: opts.agent?.split(',').map((a) => a.trim()) });
    ctx.io.out.write(`${checks.map(formatCheck).join('\n')}\n`);
    return { kind: 'doctor', allWell: allWell(checks) };
  },
});
