import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type TimelineEntry, appendBounded, auditEntries, auditEntry, mergeTimeline, readAuditTail } from '../../src/core/dashboard/timeline.ts';
import { Registry } from '../../src/core/registry/registry.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';

const at = (s: number) => new Date(Date.UTC(2026, 11, 2, 10, 0, s)).toISOString();

function published(seq: number, event: string, detail: string, second: number, attempt = 1): string {
  const payload = {
    schema_version: 1,
    seq,
    job_id: 'abcd0001',
    event,
    timestamp: '2026-12-02T10:00:00Z',
    detail,
    data: { dispatch_token: 'x', attempt_id: attempt, hmac_sig: 'f'.repeat(64) },
  };
  return JSON.stringify({ type: 'published', seq, event, at: at(second), job_id: 'abcd0001', payload });
}

const live = (seq: number, event: string, detail: string, ms: number, attempt = 1): TimelineEntry => ({
  kind: 'event',
  at: ms,
  seq,
  attempt,
  event,
  detail,
  source: 'live',
});

describe('timeline', () => {
  it("reads a real registry's audit log: registration, transitions, events, rejections — never a rejected message's content", async () => {
    const dir = tempDirForTest();
    const registry = new Registry({ registryDir: join(dir, 'jobs'), logDir: join(dir, 'logs') });
    await registry.register({
      jobId: 'abcd0001',
      brief: 'b',
      transport: 'herdr',
      dependsOn: [],
      heartbeatSec: 30,
      heartbeatMisses: 4,
      ackTimeoutSec: 180,
      timeoutSec: 3600,
    });
    await registry.pick('sess');
    const file = registry.paths.events('abcd0001');
    appendFileSync(file, `${published(1, 'started', 'on it', 1)}\n`);
    registry.audit.append('abcd0001', { type: 'rejected', reason: 'json', topic: 't', seq: 2, detail: 'Unexpected token <script>FORGED' });
    registry.audit.append('abcd0001', { type: 'seq_gap', seq: 5, expected: 2 });
    registry.audit.append('abcd0001', { type: 'duplicate', seq: 1, event: 'started' });
    appendFileSync(file, 'not json\n');
    await registry.close('abcd0001', 'cancelled');

    const entries = auditEntries(readAuditTail(file, 1 << 20));
    expect(entries.map((e) => [e.kind, e.event])).toEqual([
      ['registered', 'registered'],
      ['status', 'running'],
      ['event', 'started'],
      ['rejected', 'json'],
      ['seq_gap', 'seq_gap'],
      ['duplicate', 'started'],
      ['status', 'cancelled'],
    ]);
    expect(entries[2]).toMatchObject({ seq: 1, attempt: 1, detail: 'on it', source: 'audit' });
    expect(entries[4]!.detail).toBe('seq 2–4 not seen by a watcher');
    expect(entries[6]!.detail).toBe('running → cancelled (operator): cancelled');
    expect(JSON.stringify(entries)).not.toContain('FORGED');
  });

  it('shows permission answers: which request, from whom, and the reason only', () => {
    const line = (o: Record<string, unknown>) => auditEntry(JSON.stringify({ at: at(4), job_id: 'abcd0001', ...o }))!;
    const sent = line({
      type: 'decision_sent',
      source: 'dashboard',
      request_seq: 3,
      decision: 'allow',
      reason: 'approved by the operator',
      payload: { SIGNED: 1 },
    });
    expect(sent).toMatchObject({
      kind: 'decision',
      seq: null,
      event: 'decision: allow',
      detail: 'sent for the request at #3 (dashboard): approved by the operator',
    });
    expect(JSON.stringify(sent)).not.toContain('SIGNED');
    expect(line({ type: 'decision_received', request_seq: 3, decision: 'allow', reason: 'ok', topic: 't' }).detail).toBe(
      'received for the request at #3 by the waiting side: ok',
    );
    expect(line({ type: 'decision_defaulted', decision: 'deny', by: 'timeout', reason: 'no decision within 60 s' }).detail).toBe(
      'given by default for the request (timeout): no decision within 60 s',
    );
  });

  it('reads only the end of a long log, from a whole line on', () => {
    const file = join(tempDirForTest(), 'events.ndjson');
    const lines = Array.from({ length: 2000 }, (_, i) => published(i + 1, 'progress', `step ${i + 1}`, i % 60));
    writeFileSync(file, `${lines.join('\n')}\n`);
    const tail = readAuditTail(file, 16 * 1024);
    expect(tail.truncated).toBe(true);
    const entries = auditEntries(tail);
    expect(entries.length).toBeGreaterThan(10);
    expect(entries.at(-1)!.seq).toBe(2000);
    expect(entries.every((e) => e.kind === 'event')).toBe(true);
    expect(readAuditTail(join(file, '..', 'missing.ndjson'), 1024)).toEqual({ lines: [], truncated: false });
  });

  it('merges live events with the audit once each, in time order, and marks the seqs nobody saw', () => {
    const base = Date.parse(at(0));
    const audit = [auditEntry(published(1, 'started', 'go', 1))!, auditEntry(published(2, 'progress', 'a', 2))!];
    const liveOnes = [live(2, 'progress', 'a', base + 2100), live(5, 'progress', 'b', base + 5000), live(6, 'completed', 'done', base + 6000)];
    const merged = mergeTimeline(audit, liveOnes);
    expect(merged.map((e) => [e.seq, e.source, e.gap])).toEqual([
      [1, 'audit', undefined],
      [2, 'audit', undefined],
      [5, 'live', 2],
      [6, 'live', undefined],
    ]);
    // A new attempt starts its own count (its seqs continue the old attempt's).
    const next = mergeTimeline([], [live(3, 'completed', '', 1, 1), live(4, 'started', '', 2, 2), live(5, 'completed', '', 3, 2)]);
    expect(next.map((e) => e.gap)).toEqual([undefined, undefined, undefined]);
    expect(mergeTimeline([], liveOnes, 2).map((e) => e.seq)).toEqual([5, 6]);
  });

  it("shows a rejection once: the dashboard's own watch audits it, then marks it live", () => {
    const base = Date.parse(at(0));
    const audited = auditEntry(JSON.stringify({ type: 'rejected', reason: 'hmac', topic: 't', seq: 2, detail: 'x', at: at(3) }))!;
    const mark = (seq: number, reason: string, ms: number): TimelineEntry => ({
      kind: 'rejected',
      at: ms,
      seq,
      attempt: null,
      event: reason,
      detail: `message rejected (${reason})`,
      source: 'live',
    });
    const merged = mergeTimeline([audited], [mark(2, 'hmac', base + 3004), mark(2, 'hmac', base + 9000), mark(2, 'json', base + 3004)]);
    // The same seq and reason at the same moment is the audited line; later, or for another reason, it is another message.
    expect(merged.map((e) => [e.source, e.event, e.at - base])).toEqual([
      ['audit', 'hmac', 3000],
      ['live', 'json', 3004],
      ['live', 'hmac', 9000],
    ]);
  });

  it('folds only consecutive heartbeats of one attempt', () => {
    const ring: TimelineEntry[] = [];
    appendBounded(ring, live(1, 'progress', 'heartbeat', 1), 10);
    appendBounded(ring, live(2, 'progress', 'heartbeat', 2), 10);
    appendBounded(ring, live(4, 'progress', 'heartbeat', 4), 10); // a gap: a line of its own
    appendBounded(ring, live(5, 'progress', 'working', 5), 10);
    appendBounded(ring, live(6, 'progress', 'heartbeat', 6), 10);
    expect(ring.map((e) => [e.seq, e.seq_to, e.count])).toEqual([
      [1, 2, 2],
      [4, undefined, undefined],
      [5, undefined, undefined],
      [6, undefined, undefined],
    ]);
  });
});
