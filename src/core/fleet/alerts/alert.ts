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
  /** `stalled`: whole minutes since the job's last accepted event (the seed's "minutes since update"). */
  minutes_since_update?: number;
  /** `agent_offline`: hours since the agent's last presence, one decimal (the seed's "hours since last check-in"). */
  hours_since_check_in?: number;
}

type AlertFields = { job_id?: string | null; agent?: string | null; detail: string } & Pick<Alert, 'minutes_since_update' | 'hours_since_check_in'>;

export function makeAlert(alert: AlertKind, fields: AlertFields, now = new Date()): Alert {
  const { job_id = null, agent = null, detail, ...since } = fields;
  return { alert, job_id, agent, detail, at: now.toISOString(), ...since };
}

/** Hours from an ISO time to `now`, one decimal, never below 0 (clocks of two hosts differ). */
export function hoursSince(iso: string, now = Date.now()): number {
  const ms = now - Date.parse(iso);
  return Number.isFinite(ms) ? Math.max(0, Math.round(ms / 360_000) / 10) : 0;
}

/** One line a person reads (a webhook's text, `--pretty`). */
export function alertText(a: Alert): string {
  const about = [a.job_id ? `job ${a.job_id}` : undefined, a.agent ? `agent ${a.agent}` : undefined].filter(Boolean).join(', ');
  const since =
    a.minutes_since_update !== undefined
      ? `; ${a.minutes_since_update} min since last update`
      : a.hours_since_check_in !== undefined
        ? `; ${a.hours_since_check_in} h since last check-in`
        : '';
  return `[MAM] ${a.alert}${about ? ` (${about})` : ''}: ${a.detail}${since}`;
}
