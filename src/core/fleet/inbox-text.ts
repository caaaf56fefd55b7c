import type { JobRecord } from '../registry/job-record.ts';
import type { InboxContent } from './inbox.ts';
import type { Invitation } from './roundtable.ts';

type JobLine = Pick<JobRecord, 'job_id' | 'status' | 'brief' | 'agent_session' | 'to'>;

/** A brief's first line, shortened: the inbox names the work, `mam show` holds it whole. */
const BRIEF_CHARS = 160;

/**
 * `mam inbox --text`: what an agent missed, as lines a model reads at session start (a hook's
 * output becomes part of its conversation), and nothing at all when it missed nothing, so that a
 * quiet start stays quiet.
 */
export function inboxText(inbox: InboxContent & { invitations: Invitation[] }): string {
  const { jobs, alerts, invitations } = inbox;
  if (jobs.length === 0 && alerts.length === 0 && invitations.length === 0) return '';
  const count = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  const invited = invitations.length > 0 ? `, ${count(invitations.length, 'roundtable invitation')}` : '';
  const lines = [`MAM inbox for ${inbox.agent}: ${count(jobs.length, 'job')} and ${count(alerts.length, 'alert')} since you last asked${invited}.`];
  // The records' own type: `Omit` over a loose object forgets its named fields.
  for (const j of jobs as unknown as JobLine[]) {
    const brief = (j.brief.split('\n')[0] ?? '').trim();
    const short = brief.length > BRIEF_CHARS ? `${brief.slice(0, BRIEF_CHARS - 1)}…` : brief;
    const to = j.to ? `to ${j.to}` : `session ${j.agent_session ?? 'any'}`;
    lines.push(`- job ${j.job_id} (${to}, ${j.status}): ${short} — take it with: mam-pick --agent-session ${inbox.agent}`);
  }
  for (const i of invitations) {
    const question = (i.question.split('\n')[0] ?? '').trim();
    lines.push(
      `- roundtable: ${i.from} asks for your counsel on turn ${i.turn_id} by ${i.deadline}: ${question.length > BRIEF_CHARS ? `${question.slice(0, BRIEF_CHARS - 1)}…` : question} — answer with: mam roundtable counsel --turn ${i.turn_id} --agent ${inbox.agent} --text "…"`,
    );
  }
  for (const a of alerts) {
    const about = a.job_id ? ` job ${a.job_id}` : '';
    lines.push(`- alert ${a.alert}${about} at ${a.at}: ${a.detail}`);
  }
  return `${lines.join('\n')}\n`;
}
