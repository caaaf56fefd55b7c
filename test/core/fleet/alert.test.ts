import { describe, expect, it } from 'vitest';
import { alertText, hoursSince, makeAlert } from '../../../src/core/fleet/alerts/alert.ts';

/** The seed's alert table: a stalled job says the minutes since its update, an offline agent the hours since its check-in. */

describe('alerts as the seed lists them', () => {
  const at = new Date('2026-12-06T12:00:00.000Z');

  it('a stalled alert carries minutes_since_update and says it', () => {
    const a = makeAlert('stalled', { job_id: 'abcd1234', agent: 'ada', detail: 'no accepted event for 750 s (window 600 s)', minutes_since_update: 12 }, at);
    expect(a).toEqual({
      alert: 'stalled',
      job_id: 'abcd1234',
      agent: 'ada',
      detail: 'no accepted event for 750 s (window 600 s)',
      at: '2026-12-06T12:00:00.000Z',
      minutes_since_update: 12,
    });
    expect(alertText(a)).toBe('[MAM] stalled (job abcd1234, agent ada): no accepted event for 750 s (window 600 s); 12 min since last update');
  });

  it('an agent_offline alert carries hours_since_check_in; the others carry neither', () => {
    const off = makeAlert('agent_offline', { agent: 'bob', detail: 'connection lost (Last Will)', hours_since_check_in: 2.5 }, at);
    expect(alertText(off)).toBe('[MAM] agent_offline (agent bob): connection lost (Last Will); 2.5 h since last check-in');
    const failed = makeAlert('failed', { job_id: 'abcd1234', detail: 'tests failed' }, at);
    expect(Object.keys(failed).sort()).toEqual(['agent', 'alert', 'at', 'detail', 'job_id']);
    expect(alertText(failed)).toBe('[MAM] failed (job abcd1234): tests failed');
  });

  it('hoursSince: one decimal, never negative (another host’s clock may run ahead), 0 for a time it cannot read', () => {
    const now = Date.parse('2026-12-06T12:00:00.000Z');
    expect(hoursSince('2026-12-06T09:30:00.000Z', now)).toBe(2.5);
    expect(hoursSince('2026-12-06T11:57:00.000Z', now)).toBe(0.1);
    expect(hoursSince('2026-12-06T12:05:00.000Z', now)).toBe(0);
    expect(hoursSince('not a time', now)).toBe(0);
  });
});
