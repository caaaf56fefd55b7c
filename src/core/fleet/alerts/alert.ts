/**
 * The monitor's alerts (docs/coordination-reference.md, "Alerts"): a shape of their own, so a
 * consumer tells them from events by the `alert` key alone. Raised for what needs a person: a job
 * gone silent, a job ended `error`, an agent waiting for a permission, an agent gone offline. A
 * completion raises nothing.
 */
export const ALERT_KINDS = ['stalled', 'failed', 'permission_waiting', 'agent_offline'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface Alert {
  alert: AlertKind;
  job_id: string | null;
  agent: string | null;
  detail: string;
  at: string;
}

export function makeAlert(alert: AlertKind, fields: { job_id?: string | null; agent?: string | null; detail: string }, now = new Date()): Alert {
  return { alert, job_id: fields.job_id ?? null, agent: fields.agent ?? null, detail: fields.detail, at: now.toISOString() };
}

/** One line a person reads (a webhook's text, `--pretty`). */
export function alertText(a: Alert): string {
  const about = [a.job_id ? `job ${a.job_id}` : undefined, a.agent ? `agent ${a.agent}` : undefined].filter(Boolean).join(', ');
  return `[MAM] ${a.alert}${about ? ` (${about})` : ''}: ${a.detail}`;
}
