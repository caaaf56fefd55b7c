import { shellQuote } from '../bin-path.ts';
import type { MamConfig } from '../config/config.ts';
import type { Registry } from '../registry/registry.ts';
import { isTerminalStatus } from '../vocabulary.ts';
import type { JobRow } from './job-board.ts';

/** What an action sees of a job: its row, before the actions are listed on it. */
export type ActionRow = Omit<JobRow, 'actions'>;

export interface ActionResult {
  /** One line for the page. */
  message: string;
  /** Done, but with a caveat (e.g. watchers not told over the broker). */
  warning?: string | undefined;
}

/**
 * One thing an operator may do to a job from the page. Each goes through the same core as its CLI
 * command, so the dashboard can do nothing the CLI cannot.
 */
export interface DashboardAction {
  name: string;
  /** The button's text. */
  label: string;
  appliesTo(row: ActionRow): boolean;
  /** The same action as a command line, shown on the job view whether actions are enabled or not. */
  cli(jobId: string): string[];
  run(jobId: string): Promise<ActionResult>;
}

export interface ActionContext {
  config: MamConfig;
  registry: Registry;
}

/** Delivery tries of a decision, as `mam approve`'s default. */
const DECISION_ATTEMPTS = 3;

/**
 * Cancel (`mam close --request cancelled`), redispatch (`mam redispatch`), and approve/deny
 * (`mam approve|deny`) for a job whose last event that is not a heartbeat asks for permission.
 */
export function coreActions(ctx: ActionContext): DashboardAction[] {
  return [
    decisionAction(ctx, 'approve', 'allow', 'Approve'),
    decisionAction(ctx, 'deny', 'deny', 'Deny'),
    {
      name: 'cancel',
      label: 'Cancel job',
      appliesTo: (row) => !isTerminalStatus(row.status),
      cli: (jobId) => ['mam', 'close', '--job', jobId, '--request', 'cancelled'],
      async run(jobId) {
        const { closeJob } = await import('../publisher/close-state.ts');
        const { record, notice } = await closeJob(ctx.config, ctx.registry, jobId, 'cancelled');
        return {
          message: `job ${jobId} ${record.status}`,
          warning: notice ? `closed, but watchers were not told over the broker (${notice.message})` : undefined,
        };
      },
    },
    {
      name: 'redispatch',
      label: 'Redispatch',
      // Any state may be redispatched (contract §2); a pending job has nothing to start over.
      appliesTo: (row) => row.status !== 'pending',
      cli: (jobId) => ['mam', 'redispatch', '--job', jobId],
      async run(jobId) {
        const { record } = await ctx.registry.redispatch(jobId);
        return { message: `job ${jobId} pending again as attempt ${record.attempt_id}` };
      },
    },
  ];
}

/**
 * `mam approve` / `mam deny` without `--seq`: the newest request of the current attempt that this
 * host's audit holds and nothing has answered (a request no one waits on is refused as such, 409).
 */
function decisionAction(ctx: ActionContext, name: 'approve' | 'deny', decision: 'allow' | 'deny', label: string): DashboardAction {
  return {
    name,
    label,
    appliesTo: (row) => !isTerminalStatus(row.status) && row.milestone_event === 'permission_required',
    cli: (jobId) => ['mam', name, '--job', jobId],
    async run(jobId) {
      const { sendDecision } = await import('../control/send-decision.ts');
      const sent = await sendDecision(ctx.config, ctx.registry, { jobId, decision, attempts: DECISION_ATTEMPTS, source: 'dashboard' });
      return { message: `job ${jobId}: ${decision} sent for the request at seq ${sent.requestSeq}` };
    },
  };
}

export interface CliLine {
  label: string;
  line: string;
}

/** The actions of one dashboard, in the order the page shows them. */
export class ActionTable {
  readonly #actions = new Map<string, DashboardAction>();

  constructor(
    actions: readonly DashboardAction[],
    /** `--registry DIR` the dashboard was started with: the CLI lines must name the same registry. */
    private readonly registryDir?: string | undefined,
  ) {
    for (const a of actions) this.#actions.set(a.name, a);
  }

  get(name: string): DashboardAction | undefined {
    return this.#actions.get(name);
  }

  list(): Array<{ name: string; label: string }> {
    return [...this.#actions.values()].map(({ name, label }) => ({ name, label }));
  }

  applicable(row: ActionRow): string[] {
    const names: string[] = [];
    for (const a of this.#actions.values()) if (a.appliesTo(row)) names.push(a.name);
    return names;
  }

  /** Copy-paste lines for a job: look at it, follow it, and each action that applies. */
  cliLines(row: ActionRow): CliLine[] {
    const lines: CliLine[] = [{ label: 'Show the record', line: this.#line(['mam', 'show', '--job', row.job_id]) }];
    if (!isTerminalStatus(row.status)) lines.push({ label: 'Follow its events', line: this.#line(['mam', 'subscribe', '--job', row.job_id, '--pretty']) });
    for (const a of this.#actions.values()) if (a.appliesTo(row)) lines.push({ label: a.label, line: this.#line(a.cli(row.job_id)) });
    return lines;
  }

  #line(words: string[]): string {
    const all = this.registryDir === undefined ? words : [...words.slice(0, 2), '--registry', this.registryDir, ...words.slice(2)];
    return all.map(shellQuote).join(' ');
  }
}
