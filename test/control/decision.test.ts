import { describe, expect, it } from 'vitest';
import { approveCommand, denyCommand } from '../../src/cli/commands/decide.ts';
import { mcpPermissionCommand } from '../../src/cli/commands/mcp-permission.ts';
import { parseArgv } from '../../src/cli/program.ts';
import { checkDecision, decisionPayloadSchema, signDecision, verifyDecision } from '../../src/core/control/decision.ts';
import { latestUndecidedRequest, undecidedRequests } from '../../src/core/control/pending-requests.ts';
import { summarizeToolInput } from '../../src/core/control/permission-request.ts';
import { wireReason } from '../../src/core/control/send-decision.ts';
import { promptResult } from '../../src/core/control/mcp-permission-server.ts';
import { UsageError } from '../../src/core/errors.ts';
import { JsonText } from '../../src/core/registry/audit-log.ts';
import type { JobRecord } from '../../src/core/registry/job-record.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { computeHmac } from '../../src/core/wire/signature.ts';
import { brokerSide, registerJob } from './control-fixtures.ts';

/** Decisions as data: signing, each refusal of verifyDecision, summaries, and the audit scan behind `mam approve`. */

const ID = 'c0de0001';

async function job(): Promise<{ record: JobRecord; side: ReturnType<typeof brokerSide> }> {
  const side = brokerSide(1);
  return { side, record: await registerJob(side, ID) };
}

describe('decision messages', () => {
  it('a signed decision verifies for its own request, compact on the wire, in the documented shape', async () => {
    const { record } = await job();
    const signed = signDecision(record, { requestSeq: 3, decision: 'allow', reason: 'ok' });
    const text = wireJson(signed);
    expect(JSON.parse(text)).toEqual({
      schema_version: 1,
      job_id: ID,
      event: 'decision',
      request_seq: 3,
      decision: 'allow',
      reason: 'ok',
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/),
      data: { dispatch_token: record.dispatch_token, attempt_id: 1, hmac_sig: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    expect(verifyDecision(text, record, { attemptId: 1, seq: 3 })).toMatchObject({ ok: true, payload: { request_seq: 3, decision: 'allow' } });
    expect(decisionPayloadSchema.safeParse(JSON.parse(text)).success).toBe(true);
  });

  it('refuses: another key (bad_signature), another request (not_pending), another attempt (stale_attempt), another job, junk (schema)', async () => {
    const { record } = await job();
    const pending = { attemptId: 1, seq: 3 };
    const forged = wireJson(signDecision({ ...record, auth_token: 'x'.repeat(43) }, { requestSeq: 3, decision: 'allow', reason: 'forged' }));
    expect(verifyDecision(forged, record, pending)).toMatchObject({ ok: false, reason: 'bad_signature', requestSeq: 3 });

    const earlier = wireJson(signDecision(record, { requestSeq: 2, decision: 'allow', reason: 'for seq 2' }));
    expect(verifyDecision(earlier, record, pending)).toMatchObject({ ok: false, reason: 'not_pending', requestSeq: 2 });
    // Every check but the request fence passes: the waiter uses checkDecision to tell the two apart.
    expect(checkDecision(earlier, record).ok).toBe(true);

    const redispatched = { ...record, attempt_id: 2, dispatch_token: 'f'.repeat(32) };
    const old = wireJson(signDecision(record, { requestSeq: 3, decision: 'allow', reason: 'attempt 1' }));
    expect(verifyDecision(old, redispatched, { attemptId: 2, seq: 3 })).toMatchObject({ ok: false, reason: 'stale_attempt' });
    // Same attempt number, another dispatch token: still another attempt.
    expect(verifyDecision(old, { ...record, dispatch_token: 'e'.repeat(32) }, pending)).toMatchObject({ ok: false, reason: 'stale_attempt' });

    const other = wireJson(signDecision({ ...record, job_id: 'c0de0002' }, { requestSeq: 3, decision: 'allow', reason: '' }));
    expect(verifyDecision(other, record, pending)).toMatchObject({ ok: false, reason: 'wrong_job' });

    for (const junk of ['', 'not json', '[]', '{"event":"decision"}', 'x'.repeat(17 * 1024)]) {
      expect(verifyDecision(junk, record, pending)).toMatchObject({ ok: false, reason: 'schema' });
    }
    const tampered = JSON.parse(wireJson(signDecision(record, { requestSeq: 3, decision: 'deny', reason: 'no' })));
    tampered.decision = 'allow';
    expect(verifyDecision(JSON.stringify(tampered), record, pending)).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('verifies a Python sender’s spelling: any key order and spacing, signature over the canonical JSON', async () => {
    const { record } = await job();
    const unsigned = {
      data: { attempt_id: 1, dispatch_token: record.dispatch_token },
      timestamp: '2026-01-01T00:00:00Z',
      reason: 'caf\u00e9',
      decision: 'deny',
      request_seq: 7,
      event: 'decision',
      job_id: ID,
      schema_version: 1,
    };
    const sig = computeHmac(unsigned, record.auth_token);
    const spaced = JSON.stringify({ ...unsigned, data: { ...unsigned.data, hmac_sig: sig } }, null, 1);
    expect(verifyDecision(spaced, record, { attemptId: 1, seq: 7 })).toMatchObject({ ok: true, payload: { reason: 'café' } });
  });
});

describe('what a request carries and what an answer says', () => {
  it('summaries: the command, the file relative to the workspace or <path>, compact JSON otherwise; scrubbed, one line, ≤ 200 chars', () => {
    const scrub = { workspaceRoot: '/work/proj', secrets: ['s3cret-token'] };
    expect(summarizeToolInput('Bash', { command: 'curl -H "x: s3cret-token" https://e.x\nrm -rf /etc/x' }, scrub)).toBe(
      'curl -H "x: <redacted>" https://e.x rm -rf <path>',
    );
    expect(summarizeToolInput('Edit', { file_path: '/work/proj/src/a.ts', old_string: 'a', new_string: 'b' }, scrub)).toBe('src/a.ts');
    expect(summarizeToolInput('Write', { file_path: '/home/me/.ssh/config', content: 'x' }, scrub)).toBe('<path>');
    expect(summarizeToolInput('mcp__x__y', { a: 1, p: '/opt/data' }, scrub)).toBe('{"a":1,"p":"<path>"}');
    const long = summarizeToolInput('Bash', { command: 'echo '.repeat(100) }, scrub);
    expect(Array.from(long)).toHaveLength(200);
    expect(long.endsWith('…')).toBe(true);
  });

  it('a reason is scrubbed like a detail and defaults by decision', async () => {
    const { record, side } = await job();
    expect(wireReason(side.config, record, 'deny', `no: ${record.auth_token} at ${side.ws.root}/x and /etc/passwd`)).toBe(
      'no: <redacted> at <path> and <path>',
    );
    expect(wireReason(side.config, record, 'allow', undefined)).toBe('approved by the operator');
    expect(wireReason(side.config, record, 'deny', undefined)).toBe('denied by the operator');
  });

  it("Claude's answer: allow echoes the input, deny carries the reason, JSON-stringified in one text block", () => {
    const input = { command: 'ls' };
    expect(JSON.parse(promptResult({ decision: 'allow', reason: 'ok', by: 'operator' }, input).content[0]!.text)).toEqual({
      behavior: 'allow',
      updatedInput: input,
    });
    expect(JSON.parse(promptResult({ decision: 'deny', reason: 'not now', by: 'timeout' }, input).content[0]!.text)).toEqual({
      behavior: 'deny',
      message: 'not now',
    });
  });
});

describe('the request `mam approve` answers without --seq', () => {
  const published = (seq: number, attempt: number, event = 'permission_required') => ({
    type: 'published' as const,
    seq,
    event,
    payload: new JsonText(JSON.stringify({ seq, event, data: { attempt_id: attempt, permission: { tool: 'Bash', awaits_decision: true } } })),
  });

  it('the newest permission_required of the current attempt that no decision line settles', async () => {
    const { record, side } = await job();
    const log = side.registry.audit;
    expect(latestUndecidedRequest(side.registry, record)).toBeUndefined();
    log.append(ID, published(1, 1));
    log.append(ID, published(2, 1, 'progress'));
    log.append(ID, published(3, 1));
    log.append(ID, published(4, 1));
    log.append(ID, { type: 'decision_received', request_seq: 4, decision: 'allow' });
    expect(undecidedRequests(side.registry, record)).toEqual([1, 3]);
    expect(latestUndecidedRequest(side.registry, record)).toBe(3);
    log.append(ID, { type: 'decision_sent', request_seq: 3 });
    log.append(ID, { type: 'decision_defaulted', request_seq: 1, by: 'timeout' });
    expect(latestUndecidedRequest(side.registry, record)).toBeUndefined();
    // A request of an earlier attempt is not waiting in this one.
    log.append(ID, published(5, 1));
    expect(latestUndecidedRequest(side.registry, { ...record, attempt_id: 2 })).toBeUndefined();
    expect(latestUndecidedRequest(side.registry, record)).toBe(5);
    // One nobody waits on (a hook's, or `mam publish --event permission_required`) is not answered by default.
    log.append(ID, { type: 'published', seq: 6, event: 'permission_required', payload: new JsonText('{"seq":6,"data":{"attempt_id":1}}') });
    expect(latestUndecidedRequest(side.registry, record)).toBe(5);
  });
});

describe('argv → options', () => {
  const J = 'abcd1234';
  it.each([
    [approveCommand, ['--job', J], { job: J, attempts: 3 }],
    [
      denyCommand,
      ['--job', J, '--seq', '7', '--reason', 'no', '--attempts', '1', '--registry', '/r'],
      { job: J, seq: 7, reason: 'no', attempts: 1, registry: '/r' },
    ],
    [mcpPermissionCommand, ['--job', J], { job: J, timeout: 300 }],
    [mcpPermissionCommand, ['--job', J, '--timeout', '0', '--attempt-id', '2'], { job: J, timeout: 0, attemptId: 2 }],
  ])('%#: accepted', async (spec, argv, options) => {
    expect(await parseArgv(spec, argv)).toEqual(options);
  });

  it.each([
    [approveCommand, []],
    [approveCommand, ['--job', 'nope']],
    [approveCommand, ['--job', J, '--seq', '0']],
    [denyCommand, ['--job', J, '--reason', 'x'.repeat(1001)]],
    [mcpPermissionCommand, ['--job', J, '--timeout', '-1']],
  ])('%#: refused before anything runs', async (spec, argv) => {
    await expect(parseArgv(spec, argv)).rejects.toSatisfy((e) => e instanceof UsageError || (e as Error).name === 'CommanderError');
  });
});
