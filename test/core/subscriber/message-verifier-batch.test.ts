import { describe, expect, it } from 'vitest';
import { signedPair } from '../../../src/core/publisher/publisher.ts';
import type { JobRecord } from '../../../src/core/registry/job-record.ts';
import { MessageVerifier } from '../../../src/core/subscriber/message-verifier.ts';
import { wireJson } from '../../../src/core/wire/canonical-json.ts';
import { eventsTopic } from '../../../src/core/wire/topics.ts';
import { input, tempRegistry } from '../registry/registry-fixtures.ts';

// The watcher checks each job's record once per drain batch (every message of a batch arrived
// before it began), and on every call outside one. A redispatch must be seen by the next batch.

const ROOT = 'python/mqtt/jobs';
const progress = (record: JobRecord, seq: number) => Buffer.from(wireJson(signedPair(record, seq, 'progress', 'working', undefined).eventPayload));

describe('MessageVerifier batches', () => {
  it('reads a record once per batch; the next batch sees a redispatch, and calls without a batch always do', async () => {
    const { registry } = tempRegistry();
    const first = await registry.register(input());
    const verifier = new MessageVerifier(ROOT, registry, () => true);
    const topic = eventsTopic(ROOT, first.job_id);

    expect(verifier.verify(topic, progress(first, 1), false, 1)).toMatchObject({ ok: true });
    await registry.close(first.job_id, 'error');
    const { record: second } = await registry.redispatch(first.job_id);
    expect(second.attempt_id).toBe(2);

    // Same batch: the record as checked when the batch began.
    expect(verifier.verify(topic, progress(second, 2), false, 1)).toMatchObject({ ok: false, reason: 'stale_attempt' });
    // Next batch: the new attempt counts, the old one no longer does.
    expect(verifier.verify(topic, progress(second, 2), false, 2)).toMatchObject({ ok: true });
    expect(verifier.verify(topic, progress(first, 3), false, 2)).toMatchObject({ ok: false, reason: 'stale_attempt' });

    await registry.close(first.job_id, 'error');
    const { record: third } = await registry.redispatch(first.job_id);
    expect(verifier.verify(topic, progress(third, 3), false)).toMatchObject({ ok: true });
    expect(verifier.verify(topic, progress(second, 4), false)).toMatchObject({ ok: false, reason: 'stale_attempt' });
  });
});
