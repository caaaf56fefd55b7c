import type { MqttClient } from 'mqtt';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { signDecision } from '../../src/core/control/decision.ts';
import { DecisionWaiter } from '../../src/core/control/decision-waiter.ts';
import { askPermission, requestPermission } from '../../src/core/control/permission-request.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { freePort } from '../helpers/free-port.ts';
import { connectPlainClient, receivedMessages } from '../helpers/mqtt-client.ts';
import { type Side, TOPIC_ROOT, auditLine, auditOf, brokerSide, controlTopicOf, mam, oneLine, permissionPublished, registerJob } from './control-fixtures.ts';

/**
 * Permission answers end to end through a real broker (docs/permissions.md): the asking side in
 * this process (askPermission, as a hook or the MCP server runs it), the operator's side as the
 * built `mam approve` / `mam deny`, hostile messages from a plain MQTT client.
 */

describe('permission answers over the broker', () => {
  let broker: TestBroker;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });

  /** A plain client subscribed to everything of the job, so the test sees the wire as it was. */
  async function tap(id: string): Promise<MqttClient> {
    const client = await connectPlainClient(broker.url);
    await client.subscribeAsync(`${TOPIC_ROOT}/${id}/#`, { qos: 1 });
    return client;
  }

  const ask = (side: Side, id: string, timeoutMs = 20_000, input: Record<string, unknown> = { command: 'git push' }) =>
    askPermission(side.config, side.registry, { jobId: id, tool: 'Bash', input, timeoutMs });

  it('approve: the request is published with a scrubbed summary, `mam approve` answers it, the waiter gets allow; all audited', async () => {
    const id = 'ab000001';
    const side = brokerSide(broker.port);
    const record = await registerJob(side, id);
    const client = await tap(id);
    const asked = ask(side, id, 20_000, { command: `cat ${side.ws.root}/secrets.env`, description: 'read it' });
    const req = await permissionPublished(side, id);
    expect(req.payload).toMatchObject({
      event: 'permission_required',
      detail: 'Permission needed: Bash',
      data: { permission: { tool: 'Bash', summary: 'cat <path>', awaits_decision: true }, attempt_id: 1 },
    });

    const r = await mam(side, 'approve', '--job', id);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const sent = JSON.parse(oneLine(r.stdout));
    expect(sent).toMatchObject({
      schema_version: 1,
      job_id: id,
      event: 'decision',
      request_seq: req.seq,
      decision: 'allow',
      reason: 'approved by the operator',
    });
    expect(sent.data).toMatchObject({ dispatch_token: record.dispatch_token, attempt_id: 1 });
    expect(await asked).toEqual({ decision: 'allow', reason: 'approved by the operator', by: 'operator' });

    expect(await auditLine(side, id, (l) => l.type === 'decision_sent')).toMatchObject({ request_seq: req.seq, decision: 'allow', attempt_id: 1 });
    expect(await auditLine(side, id, (l) => l.type === 'decision_received')).toMatchObject({
      request_seq: req.seq,
      decision: 'allow',
      reason: 'approved by the operator',
      topic: controlTopicOf(id),
    });
    // On the wire: QoS 1, never retained, the exact line printed.
    const control = receivedMessages(client).filter((m) => m.topic === controlTopicOf(id));
    expect(control).toHaveLength(1);
    expect(control[0]).toMatchObject({ qos: 1, retain: false });
    expect(JSON.parse(control[0]!.payload)).toEqual(sent);
    await client.endAsync();
    // Answered: nothing is left waiting here.
    const again = await mam(side, 'approve', '--job', id);
    expect(again.code).toBe(1);
  });

  it('deny with a reason: the agent gets deny and the reason, scrubbed like a detail', async () => {
    const id = 'ab000002';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const asked = ask(side, id);
    const req = await permissionPublished(side, id);
    const r = await mam(side, 'deny', '--job', id, '--seq', String(req.seq), '--reason', 'not outside /srv/app, please');
    expect(r.code).toBe(0);
    expect(JSON.parse(oneLine(r.stdout))).toMatchObject({ decision: 'deny', reason: 'not outside <path>, please' });
    expect(await asked).toEqual({ decision: 'deny', reason: 'not outside <path>, please', by: 'operator' });
  });

  it('a forged decision (signed with another key) is refused and audited; the real one still works', async () => {
    const id = 'ab000003';
    const side = brokerSide(broker.port);
    const record = await registerJob(side, id);
    const client = await tap(id);
    const asked = ask(side, id);
    const req = await permissionPublished(side, id);
    const forged = signDecision(
      { ...record, auth_token: 'forger-does-not-know-the-token-000000000' },
      { requestSeq: req.seq as number, decision: 'allow', reason: 'trust me' },
    );
    await client.publishAsync(controlTopicOf(id), wireJson(forged), { qos: 1 });
    expect(await auditLine(side, id, (l) => l.type === 'rejected')).toMatchObject({ reason: 'bad_signature', request_seq: req.seq, topic: controlTopicOf(id) });
    const r = await mam(side, 'deny', '--job', id, '--reason', 'no');
    expect(r.code).toBe(0);
    expect(await asked).toMatchObject({ decision: 'deny', reason: 'no', by: 'operator' });
    expect(auditOf(side, id).filter((l) => l.type === 'decision_received')).toHaveLength(1);
    await client.endAsync();
  });

  it('a replayed decision (captured for an earlier request) is refused as not_pending', async () => {
    const id = 'ab000004';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const client = await tap(id);
    const first = ask(side, id);
    const req1 = await permissionPublished(side, id);
    expect((await mam(side, 'approve', '--job', id)).code).toBe(0);
    expect(await first).toMatchObject({ decision: 'allow' });
    const captured = receivedMessages(client).find((m) => m.topic === controlTopicOf(id))!.payload;

    const second = ask(side, id);
    const req2 = await permissionPublished(side, id, (req1.seq as number) + 1);
    await client.publishAsync(controlTopicOf(id), captured, { qos: 1 });
    expect(await auditLine(side, id, (l) => l.type === 'rejected')).toMatchObject({ reason: 'not_pending', request_seq: req1.seq });
    const r = await mam(side, 'deny', '--job', id);
    expect(JSON.parse(oneLine(r.stdout))).toMatchObject({ request_seq: req2.seq, decision: 'deny' });
    expect(await second).toEqual({ decision: 'deny', reason: 'denied by the operator', by: 'operator' });
    await client.endAsync();
  });

  it('after `mam redispatch`, decisions of the old attempt are refused as stale_attempt', async () => {
    const id = 'ab000005';
    const side = brokerSide(broker.port);
    const attempt1 = await registerJob(side, id);
    const client = await tap(id);
    const first = ask(side, id);
    await permissionPublished(side, id);
    expect((await mam(side, 'approve', '--job', id)).code).toBe(0);
    await first;
    const captured = receivedMessages(client).find((m) => m.topic === controlTopicOf(id))!.payload;

    expect((await mam(side, 'redispatch', '--job', id)).code).toBe(0);
    const second = ask(side, id);
    const req2 = await auditLine(side, id, (l) => l.type === 'published' && l.event === 'permission_required' && (l.payload as any).data.attempt_id === 2);
    // The old answer replayed, and one signed for the new request by a holder of the old attempt's record.
    await client.publishAsync(controlTopicOf(id), captured, { qos: 1 });
    const old = signDecision(attempt1, { requestSeq: req2.seq as number, decision: 'allow', reason: 'old attempt' });
    await client.publishAsync(controlTopicOf(id), wireJson(old), { qos: 1 });
    await vi.waitFor(() => expect(auditOf(side, id).filter((l) => l.type === 'rejected' && l.reason === 'stale_attempt')).toHaveLength(2), { timeout: 10_000 });
    expect((await mam(side, 'approve', '--job', id)).code).toBe(0);
    expect(await second).toMatchObject({ decision: 'allow', by: 'operator' });
    await client.endAsync();
  });

  it('no answer in time: denied by timeout (fail closed), audited', async () => {
    const id = 'ab000006';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const decision = await ask(side, id, 300);
    expect(decision).toMatchObject({ decision: 'deny', by: 'timeout' });
    expect(decision.reason).toMatch(/no decision within 0\.3 s/);
    const req = await permissionPublished(side, id);
    expect(await auditLine(side, id, (l) => l.type === 'decision_defaulted')).toMatchObject({ request_seq: req.seq, decision: 'deny', by: 'timeout' });
    // A timed-out request is settled: `mam approve` finds nothing waiting.
    expect((await mam(side, 'approve', '--job', id)).code).toBe(1);
  });

  it('an answer that arrives before its request’s seq is known is kept, not refused', async () => {
    const id = 'ab000007';
    const side = brokerSide(broker.port);
    const record = await registerJob(side, id);
    const client = await connectPlainClient(broker.url);
    const waiter = await DecisionWaiter.open(side.config, side.registry, id);
    try {
      const release = waiter.hold();
      await client.publishAsync(controlTopicOf(id), wireJson(signDecision(record, { requestSeq: 1, decision: 'allow', reason: 'quick' })), { qos: 1 });
      // Junk behind it on the same topic: once its rejection is audited, the answer before it has arrived.
      await client.publishAsync(controlTopicOf(id), 'junk', { qos: 1 });
      await auditLine(side, id, (l) => l.type === 'rejected' && l.reason === 'schema');
      expect(auditOf(side, id).filter((l) => l.type === 'rejected')).toHaveLength(1);
      const answer = waiter.wait({ attemptId: 1, seq: 1 }, 10_000);
      release();
      expect(await answer).toEqual({ decision: 'allow', reason: 'quick', by: 'operator' });
    } finally {
      await waiter.close();
      await client.endAsync();
    }
  });

  it('two requests waiting on one waiter (parallel tools): `mam approve` answers the newest, then the other', async () => {
    const id = 'ab000008';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    const waiter = await DecisionWaiter.open(side.config, side.registry, id);
    try {
      const req = (command: string) =>
        requestPermission(side.config, side.registry, waiter, { jobId: id, tool: 'Bash', input: { command }, timeoutMs: 20_000 });
      const a = req('make a');
      await permissionPublished(side, id, 1);
      const b = req('make b');
      await permissionPublished(side, id, 2);
      const deny = await mam(side, 'deny', '--job', id, '--reason', 'not b');
      expect(JSON.parse(oneLine(deny.stdout))).toMatchObject({ request_seq: 2 });
      expect(await b).toMatchObject({ decision: 'deny', reason: 'not b' });
      const approve = await mam(side, 'approve', '--job', id);
      expect(JSON.parse(oneLine(approve.stdout))).toMatchObject({ request_seq: 1 });
      expect(await a).toMatchObject({ decision: 'allow' });
      // Each answer was for a request this waiter held: nothing refused.
      expect(auditOf(side, id).filter((l) => l.type === 'rejected')).toEqual([]);
    } finally {
      await waiter.close();
    }
  });

  it('no broker to listen on: denied at once by broker_unreachable, nothing published', async () => {
    const id = 'ab00000a';
    const side = brokerSide(await freePort());
    await registerJob(side, id);
    const decision = await askPermission(side.config, side.registry, { jobId: id, tool: 'Bash', input: { command: 'ls' }, timeoutMs: 20_000 }, () =>
      DecisionWaiter.open(side.config, side.registry, id, { subscribeTimeoutMs: 500 }),
    );
    expect(decision).toMatchObject({ decision: 'deny', by: 'broker_unreachable' });
    expect(auditOf(side, id).map((l) => l.type)).toEqual(['registered', 'decision_defaulted']);
  });

  it('the wait runs out while the broker is down: denied by broker_unreachable', async () => {
    const id = 'ab00000b';
    const own = await startAedesBroker();
    const side = brokerSide(own.port);
    await registerJob(side, id);
    const asked = ask(side, id, 1_500);
    await permissionPublished(side, id);
    await own.stop();
    expect(await asked).toMatchObject({ decision: 'deny', by: 'broker_unreachable' });
    expect(await auditLine(side, id, (l) => l.type === 'decision_defaulted')).toMatchObject({ by: 'broker_unreachable' });
  });

  it('`mam approve` refusals: nothing waiting on an answer (1), unknown job (66), terminal job (5), broker not acknowledging (2)', async () => {
    const id = 'ab000009';
    const side = brokerSide(broker.port);
    await registerJob(side, id);
    // A permission_required nobody waits on (published by the agent itself) is not answered by default.
    expect((await mam(side, 'publish', '--job', id, '--event', 'permission_required')).code).toBe(0);
    const none = await mam(side, 'approve', '--job', id);
    expect(none.code).toBe(1);
    expect(none.stdout).toBe('');
    expect(oneLine(none.stderr)).toMatch(/^ERROR: job ab000009: no permission request .* pass --seq N/);

    const unknown = await mam(side, 'deny', '--job', 'ab0000ff', '--seq', '1');
    expect(unknown.code).toBe(66);
    expect(oneLine(unknown.stderr)).toMatch(/^ERROR: no such job: ab0000ff/);

    const down = brokerSide(await freePort());
    await registerJob(down, id);
    const notAcked = await mam(down, 'approve', '--job', id, '--seq', '1', '--attempts', '1');
    expect(notAcked.code).toBe(2);
    expect(notAcked.stdout).toBe('');
    expect(oneLine(notAcked.stderr)).toMatch(/^ERROR: job ab000009: decision for seq 1 not acknowledged by the broker/);
    expect(auditOf(down, id).find((l) => l.type === 'publish_failed')).toMatchObject({ event: 'decision', request_seq: 1 });

    await side.registry.close(id, 'cancelled');
    const terminal = await mam(side, 'approve', '--job', id, '--seq', '1');
    expect(terminal.code).toBe(5);
    expect(oneLine(terminal.stderr)).toMatch(/^ERROR: refused: job ab000009: job is already cancelled/);
    expect(auditOf(side, id).at(-1)).toMatchObject({ type: 'refused', request: 'decision:allow' });
  });
});
