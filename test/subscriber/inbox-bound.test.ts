import { expect, it } from 'vitest';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { buildEventPayload } from '../../src/core/wire/payloads.ts';
import { signPayload } from '../../src/core/wire/signature.ts';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { auditOf, brokerWorkspace, eventsTopicOf, publishOk, recordOf, register } from '../publisher/publish-fixtures.ts';
import { startWatcher, stderrBesidesSubscribed } from './watcher.ts';

/**
 * MAM_INBOX_MAX bounds what a watch holds in memory (src/core/subscriber/message-inbox.ts): with an
 * inbox of 4, a burst of hundreds of events must still arrive whole, once each and in order — the
 * connection stops reading while the inbox is full and resumes once it drained, nothing is dropped.
 */
useBrokerCleanup();

it('a burst through an inbox of 4: every event printed once, in order, and the watch resolves', async () => {
  const broker = await startAedesBroker();
  const ws = brokerWorkspace(broker.port);
  const id = 'e6000001';
  await register(ws, id);
  const w = startWatcher(ws, ['--job', id], { env: { MAM_INBOX_MAX: '4' } });
  await w.subscribed();
  await publishOk(ws, id, 'started');
  const job = recordOf(ws, id);
  const BURST = 400;
  const signed = (seq: number, event: 'progress' | 'completed') =>
    wireJson(
      signPayload(
        buildEventPayload({ jobId: id, seq, event, detail: `step ${seq}`, dispatchToken: job.dispatch_token, attemptId: job.attempt_id }),
        job.auth_token,
      ),
    );
  const agent = await connectPlainClient(broker.url);
  // All in flight at once, as a busy fleet's events would be.
  await Promise.all(Array.from({ length: BURST }, (_, i) => agent.publishAsync(eventsTopicOf(id), signed(i + 2, 'progress'), { qos: 1 })));
  await agent.publishAsync(eventsTopicOf(id), signed(BURST + 2, 'completed'), { qos: 1 });
  await agent.endAsync();
  const exit = await w.exit(30_000);
  expect(exit.code).toBe(0);
  expect(w.events().map((e) => e.seq)).toEqual(Array.from({ length: BURST + 2 }, (_, i) => i + 1));
  expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
  expect(auditOf(ws, id).filter((l) => l.type === 'duplicate' || l.type === 'rejected')).toEqual([]);
}, 60_000);
