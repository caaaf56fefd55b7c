import path from 'node:path';
import type { Command } from 'commander';
import * as z from 'zod/mini';
import type { SessionRecord } from '../../core/sessions/session-record.ts';
import { SESSION_AGENTS, sessionNameSchema } from '../../core/sessions/session-record.ts';
import type { CommandContext } from '../context.ts';
import { secondsFlag } from '../flags.ts';
import { parseOptions, printJson } from '../options.ts';
import { defineCommand, registryOption } from '../program.ts';
import { formatTable } from '../table.ts';

/**
 * `mam session create|stop|resume|list`: named, long-lived agent sessions in tmux panes that take
 * job after job (`mam delegate --session N`). The logic is in src/core/sessions/; docs/panes.md.
 */

async function sessionContext(command: CommandContext) {
  const registry = command.registry();
  const [{ SessionStore }, sessions] = await Promise.all([import('../../core/sessions/session-store.ts'), import('../../core/sessions/sessions.ts')]);
  return {
    ctx: { config: command.config(), registry, store: new SessionStore(registry), server: { env: command.env }, warn: command.warn },
    sessions,
  };
}

const readyFlag = z.optional(secondsFlag);

/**
 * `mam session stop N`: the session is named as an operand, as `git branch -d NAME`. The command
 * layer hands `parse` the options only, so the operand joins them (as `name`) before the action.
 */
function nameOperand(cmd: Command): Command {
  return cmd.argument('<name>', 'the session').hook('preAction', (self) => {
    self.processedArgs = [{ ...self.opts(), name: self.processedArgs[0] as unknown }];
  });
}

const createOptions = z.object({
  name: sessionNameSchema,
  agent: z.enum(SESSION_AGENTS),
  workdir: z.optional(z.string().check(z.minLength(1))),
  readyTimeout: readyFlag,
  registry: z.optional(z.string()),
});

const createCommand = defineCommand({
  name: 'create',
  summary: 'start a named agent session in a tmux pane; it takes jobs one after another (mam delegate --session)',
  examples: [
    ['a Claude Code session named reviewer, working in ~/src/app', '--name reviewer --agent claude --workdir ~/src/app'],
    ["a plain shell session: each job's brief is a command line", '--name runner --agent shell'],
  ],
  configure: (cmd) =>
    registryOption(cmd)
      .requiredOption('--name <name>', 'the session name (letters, digits, _ and -)')
      .requiredOption('--agent <agent>', SESSION_AGENTS.join(' | '))
      .option('--workdir <dir>', 'the folder the agent works in (default: the current one)')
      .option('--ready-timeout <s>', "how long to wait for the agent's SessionStart hook (default 30)"),
  parse: (raw) => parseOptions(createOptions, raw),
  async run(opts, command) {
    const { ctx, sessions } = await sessionContext(command);
    const record = await sessions.createSession(ctx, {
      name: opts.name,
      agent: opts.agent,
      workdir: path.resolve(command.cwd, opts.workdir ?? '.'),
      readyTimeoutMs: opts.readyTimeout === undefined ? undefined : opts.readyTimeout * 1000,
    });
    printJson(command.io.out, record);
  },
});

const nameOptions = z.object({ name: sessionNameSchema, registry: z.optional(z.string()) });

const stopCommand = defineCommand({
  name: 'stop',
  summary: 'stop a session: its agent ends, its conversation is kept for resume (unless --purge-conversation)',
  examples: [
    ['stop reviewer; its conversation is kept for mam session resume', 'reviewer'],
    ['stop it for good, forgetting its conversation', 'reviewer --purge-conversation'],
  ],
  configure: (cmd) =>
    registryOption(nameOperand(cmd)).option(
      '--purge-conversation',
      "forget the agent's conversation (and delete its transcript): the session is terminated, not resumable",
    ),
  parse: (raw) => parseOptions(z.object({ ...nameOptions.shape, purgeConversation: z._default(z.boolean(), false) }), raw),
  async run(opts, command) {
    const { ctx, sessions } = await sessionContext(command);
    printJson(command.io.out, await sessions.stopSession(ctx, opts.name, opts.purgeConversation));
  },
});

const resumeCommand = defineCommand({
  name: 'resume',
  summary: "start a stopped session again with its conversation (the agent CLI's own resume)",
  examples: [
    ['start reviewer again where its conversation left off', 'reviewer'],
    ['then give it the next job', 'reviewer && mam delegate --session reviewer --brief "Now the docs"'],
  ],
  configure: (cmd) => registryOption(nameOperand(cmd)).option('--ready-timeout <s>', "how long to wait for the agent's SessionStart hook (default 30)"),
  parse: (raw) => parseOptions(z.object({ ...nameOptions.shape, readyTimeout: readyFlag }), raw),
  async run(opts, command) {
    const { ctx, sessions } = await sessionContext(command);
    printJson(command.io.out, await sessions.resumeSession(ctx, opts.name, opts.readyTimeout === undefined ? undefined : opts.readyTimeout * 1000));
  },
});

/** One session as listed: its record, what its held job's status is, and how to attach. */
export interface SessionListing {
  name: string;
  state: string;
  agent: string;
  idle: boolean;
  tmux_session: string | null;
  pane_id: string | null;
  attach: string | null;
  current_job: string | null;
  current_job_status: string | null;
  jobs_done: number;
  last_event: SessionRecord['last_event'];
  agent_session_id: string | null;
  detail: string | null;
  workdir: string;
  updated_at: string;
}

export function formatSessionTable(rows: SessionListing[]): string {
  const header = ['NAME', 'STATE', 'AGENT', 'PANE', 'JOB', 'DONE', 'LAST EVENT'];
  const cells = rows.map((r) => [
    r.name,
    r.state === 'running' ? `running (${r.idle ? 'idle' : 'busy'})` : r.state,
    r.agent,
    r.tmux_session === null ? '-' : `${r.tmux_session}:${r.pane_id}`,
    r.current_job === null ? '-' : `${r.current_job} (${r.current_job_status ?? 'unknown'})`,
    String(r.jobs_done),
    r.last_event === null ? '-' : `${r.last_event.type} ${r.last_event.at.replace(/\.\d+Z$/, 'Z')}${r.last_event.detail ? ` ${r.last_event.detail}` : ''}`,
  ]);
  return formatTable(header, cells);
}

const listCommand = defineCommand({
  name: 'list',
  summary: 'list named sessions: state, agent, pane, current job, jobs done, last event (a dead pane is marked terminated here)',
  examples: [
    ['every session: state, agent, current job, jobs done', ''],
    ['the names of idle running sessions, for a scheduler', '--json | jq -r \'select(.state == "running" and .idle) | .name\''],
  ],
  configure: (cmd) => registryOption(cmd).option('--json', 'one JSON object per line'),
  parse: (raw) => parseOptions(z.object({ json: z.optional(z.boolean()), registry: z.optional(z.string()) }), raw),
  async run(opts, command) {
    const { ctx, sessions } = await sessionContext(command);
    const { sessionAttachCommand } = await import('../../core/sessions/session-pane.ts');
    const { sessions: records, corrupt } = ctx.store.list();
    for (const err of corrupt) command.warn(`${err.message}; skipped`);
    const rows: SessionListing[] = [];
    for (const seen of records) {
      // Reconciled on read: a session whose pane died while nobody watched is listed as it is.
      const r = await sessions.reconcileSession(ctx, seen);
      let status: string | null = null;
      if (r.current_job !== null) {
        try {
          status = ctx.registry.read(r.current_job).status;
        } catch {
          status = 'unknown';
        }
      }
      rows.push({
        name: r.name,
        state: r.state,
        agent: r.agent,
        idle: r.idle,
        tmux_session: r.state === 'running' ? r.tmux_session : null,
        pane_id: r.state === 'running' ? r.pane_id : null,
        attach: r.state === 'running' && r.tmux_session !== null ? sessionAttachCommand(r.tmux_session, r.tmux_socket) : null,
        current_job: r.current_job,
        current_job_status: status,
        jobs_done: r.jobs_done,
        last_event: r.last_event,
        agent_session_id: r.agent_session_id,
        detail: r.detail,
        workdir: r.workdir,
        updated_at: r.updated_at,
      });
    }
    if (opts.json) {
      if (rows.length > 0) command.io.out.write(`${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
    } else if (rows.length > 0) command.io.out.write(`${formatSessionTable(rows)}\n`);
    else command.io.err.write('no sessions\n');
  },
});

export const sessionCommand = defineCommand({
  name: 'session',
  summary: 'named agent sessions that take job after job: create, stop, resume, list',
  examples: [
    ['a session that takes job after job', 'create --name reviewer --agent claude'],
    ['send it a job (exit 5: busy; reschedule)', '$0 list && mam delegate --session reviewer --brief "Review PR 12"'],
  ],
  configure: (cmd) => cmd,
  parse: () => ({}),
  async run() {},
  subcommands: [createCommand, stopCommand, resumeCommand, listCommand],
});
