import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { buildEventPayload, buildStatePayload } from '../../src/core/wire/payloads.ts';
import { JOB_STATUSES, LIFECYCLE_EVENTS as EVENT_NAMES } from '../../src/core/vocabulary.ts';
import { signPayload } from '../../src/core/wire/signature.ts';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { runBinAsync } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { type JobRecordOnDisk, auditOf, brokerWorkspace, eventsTopicOf, publishOk, recordOf, register, stateTopicOf } from '../publisher/publish-fixtures.ts';
import { startWatcher, stderrBesidesSubscribed } from './watcher.ts';

/**
 * Contract §4, "the process never crashes on input": thousands of forged and malformed messages,
 * drawn by fast-check, sent with a plain client to a job's topics while the job runs. None may be
 * printed or decide anything; each is audited `rejected` with its reason; the real outcome still
 * resolves the watch.
 */

type Reason = 'json' | 'schema' | 'hmac' | 'topic' | 'stale_attempt' | 'oversized';

interface Forged {
  kind: string;
  topic: string;
  payload: Buffer;
  /** What the audit must say; several when the generator cannot know (random text may parse). */
  reasons: Reason[];
}

interface Keys {
  /** The watched job, in its second attempt. */
  job: JobRecordOnDisk;
  /** Its first attempt's dispatch token: retained leftovers carry it. */
  oldDispatchToken: string;
  /** Another job of the same registry, with its own token. */
  other: JobRecordOnDisk;
}

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
const FLOOD_SIZE = 3_000;

function forgedMessages(k: Keys): fc.Arbitrary<Forged> {
  const id = k.job.job_id;
  const topicOf = (isState: boolean) => (isState ? stateTopicOf(id) : eventsTopicOf(id));
  const fields = fc.record({
    isState: fc.boolean(),
    seq: fc.integer({ min: 1, max: 1_000 }),
    event: fc.constantFrom(...EVENT_NAMES),
    status: fc.constantFrom(...JOB_STATUSES),
    detail: fc.string({ maxLength: 40 }),
  });
  type Fields = typeof fields extends fc.Arbitrary<infer T> ? T : never;
  /** A payload as the agent would sign it; `over` changes what goes into it before signing. */
  const payloadOf = (f: Fields, over: { jobId?: string; dispatchToken?: string; attemptId?: number } = {}) => {
    const common = {
      jobId: over.jobId ?? id,
      seq: f.seq,
      detail: f.detail,
      dispatchToken: over.dispatchToken ?? k.job.dispatch_token,
      attemptId: over.attemptId ?? k.job.attempt_id,
    };
    return f.isState ? buildStatePayload({ ...common, status: f.status, lastEvent: f.event }) : buildEventPayload({ ...common, event: f.event });
  };
  const send = (kind: string, isState: boolean, body: string | Buffer, ...reasons: Reason[]): Forged => ({
    kind,
    topic: topicOf(isState),
    payload: Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'),
    reasons,
  });

  const garbage = fc.oneof(
    fc.string({ minLength: 1, maxLength: 60 }).map((s) => send('text', false, s, 'json', 'schema')),
    fc.uint8Array({ minLength: 1, maxLength: 60 }).map((b) => send('bytes', true, Buffer.from(b), 'json', 'schema')),
    fc.tuple(fields, fc.nat()).map(([f, cut]) => {
      const text = wireJson(signPayload(payloadOf(f), k.job.auth_token));
      return send('truncated', f.isState, text.slice(0, 1 + (cut % (text.length - 1))), 'json');
    }),
    fc.constantFrom('null', '[]', '42', '"completed"', 'true', '{}').map((s) => send('not-an-object', false, s, 'schema')),
  );

  // Properly signed with the job's own token and attempt, then one field of the wrong type or out of range.
  const wrongTypes = fc
    .tuple(
      fields,
      fc.constantFrom<[string, unknown]>(
        ['seq', '1'],
        ['seq', 0],
        ['seq', -3],
        ['seq', 1.5],
        ['schema_version', 2],
        ['job_id', 123],
        ['job_id', 'NOTAJOB!'],
        ['event', 'finished'],
        ['timestamp', 'yesterday'],
        ['detail', 5],
        ['data', []],
        ['data', 'x'],
        ['data.attempt_id', '2'],
        ['data.dispatch_token', 7],
        ['data.hmac_sig', 'ABC'],
        ['missing', 'timestamp'],
      ),
    )
    .map(([f, [field, value]]) => {
      const p = signPayload(payloadOf(f), k.job.auth_token) as unknown as Record<string, any>;
      if (field === 'missing') delete p[value as string];
      else if (field.startsWith('data.')) p.data[field.slice(5)] = value;
      else p[field] = value;
      return send(`type:${field}`, f.isState, JSON.stringify(p), 'schema');
    });

  const badSignatures = fc.oneof(
    // A random signature.
    fc.tuple(fields, hex(64)).map(([f, sig]) => {
      const p = signPayload(payloadOf(f), k.job.auth_token);
      return send('random-hmac', f.isState, wireJson({ ...p, data: { ...p.data, hmac_sig: sig } }), 'hmac');
    }),
    // A valid payload signed with a token that is not the job's.
    fc
      .tuple(fields, fc.string({ minLength: 1, maxLength: 44 }))
      .map(([f, token]) => send('wrong-token', f.isState, wireJson(signPayload(payloadOf(f), token === k.job.auth_token ? `${token}x` : token)), 'hmac')),
    // Signed by the job, then altered: a completed where it said progress, another seq, another detail.
    fc.tuple(fields, fc.constantFrom('seq', 'detail', 'event', 'data')).map(([f, what]) => {
      const p = signPayload(payloadOf(f), k.job.auth_token) as unknown as Record<string, any>;
      if (what === 'seq') p.seq += 1;
      else if (what === 'detail') p.detail += '!';
      else if (what === 'data') p.data.injected = true;
      else if (f.isState) p.status = p.status === 'completed' ? 'error' : 'completed';
      else p.event = p.event === 'completed' ? 'error' : 'completed';
      return send(`tampered:${what}`, f.isState, wireJson(p), 'hmac');
    }),
  );

  // Another job's valid payload (its own token) on this job's topic.
  const wrongJob = fields.map((f) =>
    send(
      'other-job',
      f.isState,
      wireJson(signPayload(payloadOf(f, { jobId: k.other.job_id, dispatchToken: k.other.dispatch_token, attemptId: 1 }), k.other.auth_token)),
      'topic',
    ),
  );

  // Signed with the job's token, but from its first attempt: what a redispatch leaves retained.
  const stale = fc.tuple(fields, fc.constantFrom('old-attempt', 'old-token', 'future-attempt')).map(([f, how]) => {
    const over =
      how === 'old-attempt'
        ? { attemptId: 1, dispatchToken: k.oldDispatchToken }
        : how === 'old-token'
          ? { dispatchToken: k.oldDispatchToken }
          : { attemptId: k.job.attempt_id + 1 };
    return send(`stale:${how}`, f.isState, wireJson(signPayload(payloadOf(f, over), k.job.auth_token)), 'stale_attempt');
  });

  return fc.oneof(garbage, wrongTypes, badSignatures, wrongJob, stale);
}

describe('mam-subscribe under a forged and malformed flood', () => {
  useBrokerCleanup();

  it(`${FLOOD_SIZE} forged messages: none printed, each audited rejected, no crash; the real completed resolves 0`, async () => {
    const broker = await startAedesBroker();
    const ws = brokerWorkspace(broker.port);
    const [id, otherId] = ['e5000001', 'e5000002'];
    const first = await register(ws, id);
    const other = await register(ws, otherId);
    expect((await runBinAsync('mam', ['redispatch', '--job', id], ws)).code).toBe(0);
    const job = recordOf(ws, id);
    expect(job.attempt_id).toBe(2);

    const seed = Number(process.env.MAM_FLOOD_SEED ?? Date.now() % 2 ** 31);
    const forged = fc.sample(forgedMessages({ job, oldDispatchToken: first.dispatch_token, other }), { numRuns: FLOOD_SIZE, seed });
    const oversized = [0, 1, 2].map((i) => ({
      kind: 'oversized',
      topic: i % 2 ? stateTopicOf(id) : eventsTopicOf(id),
      payload: Buffer.from(JSON.stringify({ schema_version: 1, job_id: id, pad: 'x'.repeat(300 * 1024) })),
      reasons: ['oversized'] as Reason[],
    }));
    const flood = [...forged, ...oversized];
    const kinds = new Set(flood.map((f) => f.kind.split(':')[0]));
    expect([...kinds].sort(), `seed ${seed}`).toEqual([
      'bytes',
      'not-an-object',
      'other-job',
      'oversized',
      'random-hmac',
      'stale',
      'tampered',
      'text',
      'truncated',
      'type',
      'wrong-token',
    ]);

    const w = startWatcher(ws, ['--job', id]);
    await w.subscribed();
    await publishOk(ws, id, 'started', '--attempt-id', '2');

    const attacker = await connectPlainClient(broker.url);
    const sendAll = async () => {
      for (let i = 0; i < flood.length; i += 250) {
        await Promise.all(flood.slice(i, i + 250).map((m) => attacker.publishAsync(m.topic, m.payload, { qos: 1 })));
      }
    };
    // The agent keeps working while the flood runs.
    await Promise.all([sendAll(), publishOk(ws, id, 'progress', '--detail', 'mid-flood')]);
    await attacker.endAsync();

    const rejected = () => auditOf(ws, id).filter((l) => l.type === 'rejected');
    await vi.waitFor(() => expect(rejected().length, `seed ${seed}`).toBe(flood.length), { timeout: 30_000, interval: 250 });
    expect(w.running).toBe(true);
    expect(w.events().map((e) => e.event)).toEqual(['started', 'progress']);

    await publishOk(ws, id, 'completed', '--attempt-id', '2');
    const exit = await w.exit(10_000);
    expect(exit.code).toBe(0);
    expect(w.events().map((e) => [e.seq, e.event, e.data.attempt_id])).toEqual([
      [1, 'started', 2],
      [2, 'progress', 2],
      [3, 'completed', 2],
    ]);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');

    // Every forged message is audited with a reason it could have; the tally is per reason.
    const audited = rejected().map((l) => String(l.reason));
    const expected = new Map<Reason, number>();
    let ambiguous = 0;
    for (const f of flood) {
      if (f.reasons.length === 1) expected.set(f.reasons[0]!, (expected.get(f.reasons[0]!) ?? 0) + 1);
      else ambiguous++;
    }
    const tally = new Map<string, number>();
    for (const r of audited) tally.set(r, (tally.get(r) ?? 0) + 1);
    for (const reason of ['hmac', 'topic', 'stale_attempt', 'oversized'] as const) {
      expect({ reason, n: tally.get(reason) ?? 0 }, `seed ${seed}`).toEqual({ reason, n: expected.get(reason) ?? 0 });
    }
    const jsonOrSchema = (tally.get('json') ?? 0) + (tally.get('schema') ?? 0);
    expect(jsonOrSchema, `seed ${seed}`).toBe((expected.get('json') ?? 0) + (expected.get('schema') ?? 0) + ambiguous);
    expect(tally.get('schema') ?? 0).toBeGreaterThanOrEqual(expected.get('schema') ?? 0);
    expect(tally.get('json') ?? 0).toBeGreaterThanOrEqual(expected.get('json') ?? 0);
    expect(
      auditOf(ws, id).filter((l) => ['duplicate', 'seq_gap', 'ignored_after_terminal'].includes(l.type)),
      `seed ${seed}`,
    ).toEqual([]);
    // Nothing the attacker sent reached the record.
    expect(recordOf(ws, id)).toMatchObject({ status: 'completed', last_seq: 3, attempt_id: 2 });
    expect(recordOf(ws, otherId)).toMatchObject({ status: 'pending', last_seq: 0 });
  }, 90_000);
});

describe('mam-subscribe --all under a flood on arbitrary topics', () => {
  useBrokerCleanup();

  it('forged messages on any job level (not hex, unknown, another job) never crash the monitor', async () => {
    const broker = await startAedesBroker();
    const ws = brokerWorkspace(broker.port);
    const [id, otherId] = ['e5000003', 'e5000004'];
    const first = await register(ws, id);
    const other = await register(ws, otherId);
    // As above, the job is in its second attempt, so that the first one's payloads are leftovers.
    expect((await runBinAsync('mam', ['redispatch', '--job', id], ws)).code).toBe(0);
    const job = recordOf(ws, id);
    const seed = Number(process.env.MAM_FLOOD_SEED ?? Date.now() % 2 ** 31);
    // The same forgeries, each sent on a topic whose job level is drawn too: what a monitor
    // subscribed to <root>/+/events and <root>/+/state can be handed by anyone on the broker.
    const level = fc.oneof(
      fc.constant(id),
      hex(8),
      fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/),
      fc.constantFrom('..', 'XYZ', 'E5000003', 'e500000', 'e50000033', ' ', 'job id', '%2e%2e', 'é'),
    );
    const arb = fc.tuple(forgedMessages({ job, oldDispatchToken: first.dispatch_token, other }), level, fc.boolean());
    const flood = fc.sample(arb, { numRuns: 1_500, seed }).map(([f, jobLevel, isState]) => ({
      topic: `python/mqtt/jobs/${jobLevel}/${isState ? 'state' : 'events'}`,
      payload: f.payload,
    }));

    const w = startWatcher(ws, ['--all']);
    await w.subscribed();
    const attacker = await connectPlainClient(broker.url);
    for (let i = 0; i < flood.length; i += 250) {
      await Promise.all(flood.slice(i, i + 250).map((m) => attacker.publishAsync(m.topic, m.payload, { qos: 1 })));
    }
    await attacker.endAsync();

    // Still alive and still working: a real job's events come through after the flood.
    const crashed = () =>
      `crashed (seed ${seed}): ${w.stderr
        .split('\n')
        .filter((l) => !l.startsWith('{'))
        .join('\n')
        .slice(-1_500)}`;
    await publishOk(ws, otherId, 'started');
    expect(w.running, crashed()).toBe(true);
    await publishOk(ws, otherId, 'completed');
    await vi.waitFor(
      () => {
        if (!w.running) return;
        expect(w.events().filter((e) => e.job_id === otherId)).toHaveLength(2);
      },
      { timeout: 20_000 },
    );
    expect(w.running, crashed()).toBe(true);
    w.child.kill('SIGTERM');
    const exit = await w.exit(5_000);
    expect(exit.code).toBe(0);
    expect(w.events().map((e) => `${e.job_id} ${e.seq} ${e.event}`)).toEqual([`${otherId} 1 started`, `${otherId} 2 completed`]);
    expect(exit.stderr).not.toMatch(/\n\s+at /);
    expect(exit.stderr).not.toMatch(/^ERROR/m);
  }, 60_000);
});
