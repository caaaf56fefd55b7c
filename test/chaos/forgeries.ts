import fc from 'fast-check';
import type { JobRecord } from '../../src/core/registry/job-record.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { buildEventPayload, buildStatePayload } from '../../src/core/wire/payloads.ts';
import { JOB_STATUSES, LIFECYCLE_EVENTS as EVENT_NAMES } from '../../src/core/vocabulary.ts';
import { signPayload } from '../../src/core/wire/signature.ts';

/**
 * The hostile messages of the flood (issue 9), drawn by fast-check: malformed, forged, tampered,
 * cross-job, stale-attempt and oversized. Each says which audit reasons it may earn — several when
 * the generator cannot know (random text may happen to be JSON).
 */

export type Reason = 'json' | 'schema' | 'hmac' | 'topic' | 'stale_attempt' | 'oversized';

export interface Hostile {
  kind: string;
  /** `events`, `state`, or a level that is no topic kind of ours. */
  kindLevel: string;
  payload: Buffer;
  reasons: Reason[];
  retain: boolean;
}

export interface Keys {
  job: JobRecord;
  oldDispatchToken: string;
  other: JobRecord;
}

/** Every forged payload's detail starts with this, so a printed one is easy to spot. */
export const FORGED = 'FORGED';

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));

export function hostileMessages(k: Keys): { small: fc.Arbitrary<Hostile>; oversized: fc.Arbitrary<Hostile> } {
  const fields = fc.record({
    isState: fc.boolean(),
    seq: fc.integer({ min: 1, max: 1_000_000 }),
    event: fc.constantFrom(...EVENT_NAMES),
    status: fc.constantFrom(...JOB_STATUSES),
    detail: fc.string({ maxLength: 30 }).map((s) => `${FORGED} ${s}`),
    retain: fc.boolean(),
  });
  type Fields = typeof fields extends fc.Arbitrary<infer T> ? T : never;
  const payloadOf = (f: Fields, over: { jobId?: string; dispatchToken?: string; attemptId?: number } = {}) => {
    const common = {
      jobId: over.jobId ?? k.job.job_id,
      seq: f.seq,
      detail: f.detail,
      dispatchToken: over.dispatchToken ?? k.job.dispatch_token,
      attemptId: over.attemptId ?? k.job.attempt_id,
    };
    return f.isState ? buildStatePayload({ ...common, status: f.status, lastEvent: f.event }) : buildEventPayload({ ...common, event: f.event });
  };
  const msg = (kind: string, f: Pick<Fields, 'isState' | 'retain'>, body: string | Buffer, ...reasons: Reason[]): Hostile => ({
    kind,
    kindLevel: f.isState ? 'state' : 'events',
    payload: Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'),
    reasons,
    retain: f.retain,
  });

  const malformed = fc.oneof(
    fc.tuple(fields, fc.string({ minLength: 1, maxLength: 80 })).map(([f, s]) => msg('text', f, s, 'json', 'schema')),
    fc.tuple(fields, fc.uint8Array({ minLength: 1, maxLength: 80 })).map(([f, b]) => msg('bytes', f, Buffer.from(b), 'json', 'schema')),
    fc.tuple(fields, fc.nat()).map(([f, cut]) => {
      const text = wireJson(signPayload(payloadOf(f), k.job.auth_token));
      return msg('truncated', f, text.slice(0, 1 + (cut % (text.length - 1))), 'json');
    }),
    fc.tuple(fields, fc.constantFrom('null', '[]', '42', '"completed"', 'true', '{}', '{"data":{}}')).map(([f, s]) => msg('not-an-object', f, s, 'schema')),
    fc
      .tuple(fields, fc.integer({ min: 2, max: 40 }))
      .map(([f, depth]) => msg('deep', f, `${'['.repeat(depth * 50)}${']'.repeat(depth * 50)}`, 'json', 'schema')),
    fc
      .tuple(
        fields,
        fc.constantFrom<[string, unknown]>(
          ['seq', '1'],
          ['seq', 0],
          ['seq', 2.5],
          ['schema_version', 2],
          ['event', 'finished'],
          ['timestamp', 'now'],
          ['data.hmac_sig', 'ABC'],
          ['data.attempt_id', 'two'],
        ),
      )
      .map(([f, [field, value]]) => {
        const p = signPayload(payloadOf(f), k.job.auth_token) as unknown as Record<string, any>;
        if (field.startsWith('data.')) p.data[field.slice(5)] = value;
        else p[field] = value;
        return msg(`wrong-type:${field}`, f, JSON.stringify(p), 'schema');
      }),
  );

  const forged = fc.oneof(
    fc.tuple(fields, hex(64)).map(([f, sig]) => {
      const p = signPayload(payloadOf(f), k.job.auth_token);
      return msg('random-signature', f, wireJson({ ...p, data: { ...p.data, hmac_sig: sig } }), 'hmac');
    }),
    fc
      .tuple(fields, fc.string({ minLength: 1, maxLength: 44 }))
      .map(([f, token]) => msg('wrong-token', f, wireJson(signPayload(payloadOf(f), token === k.job.auth_token ? `${token}x` : token)), 'hmac')),
    // The other job's token, this job's id: an agent of another job trying to end this one.
    fields.map((f) => msg('other-token', f, wireJson(signPayload(payloadOf(f), k.other.auth_token)), 'hmac')),
    fc.tuple(fields, fc.constantFrom('seq', 'detail', 'event', 'data')).map(([f, what]) => {
      const p = signPayload(payloadOf(f), k.job.auth_token) as unknown as Record<string, any>;
      if (what === 'seq') p.seq += 1;
      else if (what === 'detail') p.detail += '!';
      else if (what === 'data') p.data.injected = true;
      else if (f.isState) p.status = p.status === 'completed' ? 'error' : 'completed';
      else p.event = p.event === 'completed' ? 'error' : 'completed';
      return msg(`tampered:${what}`, f, wireJson(p), 'hmac');
    }),
  );

  const crossJob = fields.map((f) =>
    msg(
      'other-job',
      f,
      wireJson(signPayload(payloadOf(f, { jobId: k.other.job_id, dispatchToken: k.other.dispatch_token, attemptId: k.other.attempt_id }), k.other.auth_token)),
      'topic',
    ),
  );

  const stale = fc.tuple(fields, fc.constantFrom('old-attempt', 'old-token', 'future-attempt')).map(([f, how]) => {
    const over =
      how === 'old-attempt'
        ? { attemptId: 1, dispatchToken: k.oldDispatchToken }
        : how === 'old-token'
          ? { dispatchToken: k.oldDispatchToken }
          : { attemptId: k.job.attempt_id + 1 };
    return msg(`stale:${how}`, f, wireJson(signPayload(payloadOf(f, over), k.job.auth_token)), 'stale_attempt');
  });

  // Over the 256 KiB receivers read: a valid-looking payload padded, or plain filler.
  const oversized = fc.tuple(fields, fc.integer({ min: 257 * 1024, max: 600 * 1024 })).map(([f, size]) => {
    const p = signPayload(payloadOf(f), k.job.auth_token);
    const body = wireJson({ ...p, detail: `${p.detail}${'x'.repeat(size)}` });
    return msg('oversized', f, body, 'oversized');
  });

  const small = fc.oneof(
    { arbitrary: malformed, weight: 4 },
    { arbitrary: forged, weight: 4 },
    { arbitrary: crossJob, weight: 1 },
    { arbitrary: stale, weight: 2 },
  );
  return { small, oversized };
}
