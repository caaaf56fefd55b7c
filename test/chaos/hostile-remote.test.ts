import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDispatch } from '../../src/core/remote/dispatch-payload.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { buildStatePayload } from '../../src/core/wire/payloads.ts';
import { signPayload } from '../../src/core/wire/signature.ts';
import { startAedesBroker } from '../helpers/brokers.ts';
import { makeWorkspace, type Workspace } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { chaosRng, memoryKiB, report, runBin, scale, sleep, spawnBin, waitUntil } from './chaos-kit.ts';
import { auditOf, recordOf } from './disk-invariants.ts';
import { SecretScan, endWithSecretScan } from './secret-scan.ts';

/**
 * Hostile input for the remote runner (issue 9): `mam-remote run` with MAM_DISPATCH_SECRET is
 * flooded with forged, tampered, malformed, oversized, misplaced and replayed dispatches (the real
 * ones it already ran, and a stale attempt's), and — while it runs a job — with forged `cancelled`
 * states for that job. The agent command runs exactly once per real attempt and is never stopped
 * by a forgery; the runner never crashes; every discard is logged (or audited) with its reason.
 */

const rng = chaosRng('hostile-remote');
const FORGED_DISPATCHES = scale(600, 6_000);
const REPLAYS = scale(60, 600);
const FORGED_STATES = scale(300, 3_000);
const ROOT = 'python/mqtt/jobs';
const SESSION = 'chaos-runner';

const scan = new SecretScan();
afterAll(() => endWithSecretScan(scan, 'secret scan after the remote flood'));

interface LogLine {
  msg?: string;
  reason?: string;
  job?: string;
}
const logLines = (stderr: string): LogLine[] =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);

describe('hostile input: the remote runner and its dispatches', () => {
  it(`${FORGED_DISPATCHES} forged dispatches, ${REPLAYS} replays, ${FORGED_STATES} forged cancels: the command runs once per real attempt`, {
    timeout: scale(120_000, 900_000),
  }, async () => {
    const auth = { username: 'mam-chaos', password: `pw-remote-${rng.int(1e8, 9e8)}` };
    const secret = `dispatch-secret-${rng.int(1e8, 9e8)}`;
    scan.secret('MQTT password', auth.password).secret('MAM_DISPATCH_SECRET', secret);
    const broker = await startAedesBroker({ auth });
    await scan.captureWire(broker.url, auth);
    const env = {
      MQTT_BROKER: broker.host,
      MQTT_PORT: String(broker.port),
      MQTT_USERNAME: auth.username,
      MQTT_PASSWORD: auth.password,
      MQTT_KEEPALIVE: '2',
      MAM_DISPATCH_SECRET: secret,
    };
    const delegator: Workspace = scan.workspace(makeWorkspace(env));
    const host: Workspace = scan.workspace(makeWorkspace(env));
    const ranLog = path.join(host.root, 'ran.log');
    const ran = () => (existsSync(ranLog) ? readFileSync(ranLog, 'utf8').split('\n').filter(Boolean) : []);
    // The agent: notes that it ran; a `slow` brief keeps it busy long enough to be flooded with cancels.
    const exec = `echo "$JOB_ID $MAM_ATTEMPT_ID" >> ${ranLog}; case "$MAM_JOB_BRIEF" in slow*) sleep 4;; esac`;
    const runner = spawnBin('mam-remote', ['run', '--session', SESSION, '--exec', exec], host);
    await runner.waitStderr(/^SUBSCRIBED remote runner/m);

    const attacker = await connectPlainClient(broker.url, auth);
    const seen: Array<{ topic: string; payload: Buffer }> = [];
    attacker.on('message', (topic, payload) => {
      if (payload.length > 0) seen.push({ topic, payload: Buffer.from(payload) });
    });
    await attacker.subscribeAsync(`${ROOT}/+/dispatch`, { qos: 1 });

    const register = async (brief: string) => {
      const r = await runBin('mam-register', ['--brief', brief, '--transport', 'remote'], delegator);
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { job_id: string }).job_id;
    };
    const dispatch = async (id: string, session = SESSION) => {
      const r = await runBin('mam-remote', ['dispatch', '--job', id, '--session', session], delegator);
      expect(r.code, r.stderr).toBe(0);
    };
    const finished = (id: string, attempt: number) =>
      waitUntil(() => ran().includes(`${id} ${attempt}`) && ['completed'].includes(safeStatus(host, id, attempt)), 30_000);

    // Two real jobs, the first of them in two attempts: what the attacker gets to copy.
    const j1 = await register('first job');
    await dispatch(j1);
    expect(await finished(j1, 1), `j1 attempt 1 did not run: ${runner.stderr.slice(-1_500)}`).toBe(true);
    expect((await runBin('mam', ['redispatch', '--job', j1], delegator)).code).toBe(0);
    await dispatch(j1);
    expect(await finished(j1, 2), `j1 attempt 2 did not run: ${runner.stderr.slice(-1_500)}`).toBe(true);
    const other = await register('for another session');
    await dispatch(other, 'someone-else');
    await waitUntil(() => seen.length >= 3, 5_000);
    const real = seen.filter((m) => m.topic.endsWith(`/${j1}/dispatch`));
    expect(real).toHaveLength(2);
    const target = await register('a job the attacker wants run');
    const targetRecord = recordOf(delegator, target);
    const mem0 = memoryKiB(runner.pid);

    // The flood of dispatches.
    const realParsed = JSON.parse(real[0]!.payload.toString()) as Record<string, any>;
    const forgedDispatch = fc.oneof(
      fc.string({ minLength: 1, maxLength: 60 }).map((s) => ({ kind: 'text', topic: target, body: s, reasons: ['json', 'schema'] })),
      fc.constantFrom('null', '[]', '{}', '7', '{"event":"dispatch"}').map((s) => ({ kind: 'not-a-dispatch', topic: target, body: s, reasons: ['schema'] })),
      fc.string({ minLength: 8, maxLength: 40 }).map((wrong) => ({
        kind: 'wrong-secret',
        topic: target,
        body: wireJson(buildDispatch(targetRecord, SESSION, wrong === secret ? `${wrong}!` : wrong)),
        reasons: ['hmac'],
      })),
      fc.constantFrom('brief', 'session', 'attempt_id', 'dispatch_token', 'contract').map((field) => {
        const p = structuredClone(realParsed);
        if (field === 'brief') p.brief = 'rm -rf /';
        else if (field === 'session') p.session = `${SESSION}-x`;
        else if (field === 'attempt_id') p.attempt_id = 9;
        else if (field === 'dispatch_token') p.dispatch_token = 'a'.repeat(32);
        else p.contract.timeout_sec = 1;
        return { kind: `tampered:${field}`, topic: j1, body: JSON.stringify(p), reasons: ['hmac'] };
      }),
      fc.constant({ kind: 'misplaced', topic: target, body: real[0]!.payload.toString(), reasons: ['topic'] }),
      fc
        .integer({ min: 257 * 1024, max: 400 * 1024 })
        .map((n) => ({ kind: 'oversized', topic: target, body: `{"pad":"${'x'.repeat(n)}"}`, reasons: ['oversized'] })),
    );
    const floods = fc.sample(forgedDispatch, { numRuns: FORGED_DISPATCHES, seed: rng.seed });
    const sends = [
      ...floods.map((f) => ({ topic: `${ROOT}/${f.topic}/dispatch`, payload: Buffer.from(f.body), retain: rng.chance(0.3), reasons: f.reasons })),
      // Replays of both real attempts of j1, which this runner already ran.
      ...Array.from({ length: REPLAYS }, () => ({
        topic: `${ROOT}/${j1}/dispatch`,
        payload: rng.pick(real).payload,
        retain: rng.chance(0.5),
        reasons: ['replay'],
      })),
    ];
    for (let i = sends.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [sends[i], sends[j]] = [sends[j]!, sends[i]!];
    }
    for (let i = 0; i < sends.length; i += 100) {
      await Promise.all(sends.slice(i, i + 100).map((m) => attacker.publishAsync(m.topic, m.payload, { qos: 1, retain: m.retain })));
    }
    const rejected = () => logLines(runner.stderr).filter((l) => l.msg === 'dispatch rejected');
    const drained = await waitUntil(() => rejected().length >= sends.length || !runner.running, 60_000, 200);
    expect(runner.running, `runner died: ${runner.stderr.slice(-2_000)}`).toBe(true);

    // A real slow job, flooded with forged cancels while it runs.
    const slow = await register('slow job');
    await dispatch(slow);
    expect(await waitUntil(() => ran().includes(`${slow} 1`), 20_000)).toBe(true);
    const slowRecord = recordOf(host, slow);
    const cancel = (over: { token?: string; attempt?: number; dispatchToken?: string; tamper?: boolean }) => {
      const p = signPayload(
        buildStatePayload({
          jobId: slow,
          seq: 99,
          status: 'cancelled',
          lastEvent: 'cancelled',
          detail: 'FORGED cancel',
          dispatchToken: over.dispatchToken ?? slowRecord.dispatch_token,
          attemptId: over.attempt ?? slowRecord.attempt_id,
        }),
        over.token ?? 'not-the-token',
      ) as unknown as Record<string, any>;
      if (over.tamper) p.detail = 'tampered';
      return wireJson(p);
    };
    const cancels = fc.sample(
      fc.oneof(
        fc
          .string({ minLength: 1, maxLength: 40 })
          .map((token) => ({ body: cancel({ token: token === slowRecord.auth_token ? `${token}x` : token }), reason: 'hmac' })),
        fc.constant({ body: cancel({ token: slowRecord.auth_token, tamper: true }), reason: 'hmac' }),
        fc.constant({ body: cancel({ token: slowRecord.auth_token, attempt: 2 }), reason: 'stale_attempt' }),
        fc.string({ minLength: 1, maxLength: 40 }).map((s) => ({ body: s, reason: 'json|schema' })),
      ),
      { numRuns: FORGED_STATES, seed: rng.seed + 7 },
    );
    await Promise.all(cancels.map((c) => attacker.publishAsync(`${ROOT}/${slow}/state`, c.body, { qos: 1 })));
    expect(await finished(slow, 1), `the slow job did not complete: ${runner.stderr.slice(-1_500)}`).toBe(true);
    await sleep(300);
    const mem1 = memoryKiB(runner.pid);

    // The command ran exactly once per real attempt; nothing forged or replayed ran.
    expect(ran().sort()).toEqual([`${j1} 1`, `${j1} 2`, `${slow} 1`].sort());
    expect(existsSync(path.join(host.root, '.mam', 'jobs', `${target}.json`))).toBe(false);
    expect(existsSync(path.join(host.root, '.mam', 'jobs', `${other}.json`))).toBe(false);
    expect(runner.running).toBe(true);
    expect(drained, `${rejected().length} of ${sends.length} dispatch discards logged`).toBe(true);
    const tally = new Map<string, number>();
    for (const l of rejected()) tally.set(String(l.reason), (tally.get(String(l.reason)) ?? 0) + 1);
    const want = (r: string) => sends.filter((s) => s.reasons.length === 1 && s.reasons[0] === r).length;
    for (const reason of ['hmac', 'topic', 'oversized', 'replay']) expect({ reason, n: tally.get(reason) ?? 0 }).toEqual({ reason, n: want(reason) });
    // The forged cancels: each audited in the runner's log of the job, with its reason.
    const stateRejects = auditOf(host, slow).filter((l) => l.type === 'rejected');
    expect(stateRejects).toHaveLength(FORGED_STATES);
    expect(stateRejects.filter((l) => l.reason === 'stale_attempt')).toHaveLength(cancels.filter((c) => c.reason === 'stale_attempt').length);

    runner.kill('SIGTERM');
    const res = await runner.done;
    expect(res.code, res.stderr.slice(-1_000)).toBe(0);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    await attacker.endAsync(true);
    const mib = (kib: number) => Math.round(kib / 1024);
    report({
      fault:
        'hostile flood on mam-remote run (fast-check): forged, tampered, malformed, oversized, misplaced and replayed dispatches; forged cancels during a run',
      injected: sends.length + cancels.length,
      checked:
        `${floods.length} forged dispatches, ${REPLAYS} replays of the 2 real attempts (one stale), ${cancels.length} forged cancelled states while a job ran; ` +
        `the command ran exactly once per real attempt (3), never for a forgery; the running agent was not stopped; no crash; ` +
        `discards logged with reason: ${[...tally].map(([r, n]) => `${r} ${n}`).join(', ')}; forged cancels audited rejected ${stateRejects.length}; RSS ${mib(mem0.rss)} → ${mib(mem1.rss)} MiB`,
      result: 'pass',
    });
  });
});

function safeStatus(ws: Workspace, id: string, attempt: number): string {
  try {
    const r = recordOf(ws, id);
    return r.attempt_id === attempt ? r.status : 'other-attempt';
  } catch {
    return 'none';
  }
}
