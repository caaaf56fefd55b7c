import { describe, expect, it } from 'vitest';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { buildEventPayload, buildStatePayload } from '../../src/core/wire/payloads.ts';
import { signPayload } from '../../src/core/wire/signature.ts';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { makeWorkspace } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { jsonLines, runBin, spawnBin, waitUntil } from './chaos-kit.ts';
import { auditOf, recordOf } from './disk-invariants.ts';

/**
 * Duplicate keys and number forms on the wire (issue 27): a genuine signed event or state, as if
 * captured before its delivery, sent with a second `event`/`status`/`seq` key that means something
 * else (Python's json keeps the last, other parsers the first), or with its seq spelled `2.0`,
 * `2e0` or `0x2`. The watcher refuses every one (audited `rejected`), prints none, and ends with
 * the genuine outcome.
 */

const ROOT = 'python/mqtt/jobs';
describe('hostile JSON: duplicate keys and number forms at the watcher', () => {
  useBrokerCleanup();
  it('no duplicate-key or re-spelled event or state is printed or decides the job', async () => {
    const broker = await startAedesBroker();
    const ws = makeWorkspace({ MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port) });
    const id = (JSON.parse((await runBin('mam-register', ['--brief', 'json'], ws)).stdout) as { job_id: string }).job_id;
    const job = recordOf(ws, id);
    const sub = spawnBin('mam-subscribe', ['--job', id], ws);
    await sub.waitStderr(/^SUBSCRIBED/m);
    const started = await runBin('mam-publish', ['--job', id, '--event', 'started', '--detail', 'legit'], ws);
    expect(started.code, started.stderr).toBe(0);

    const common = { jobId: id, seq: 2, detail: 'FORGED', dispatchToken: job.dispatch_token, attemptId: job.attempt_id };
    const event = wireJson(signPayload(buildEventPayload({ ...common, event: 'progress' }), job.auth_token));
    const state = wireJson(signPayload(buildStatePayload({ ...common, status: 'running', lastEvent: 'progress' }), job.auth_token));
    const hostile: Array<[string, string]> = [
      ['events', event.replace(/}$/, ',"event":"completed"}')],
      ['events', event.replace(/^{/, '{"event":"completed",')],
      ['events', event.replace(/}$/, ',"seq":3}')],
      ['events', event.replace('"seq":2', '"seq":2.0')],
      ['events', event.replace('"seq":2', '"seq":2e0')],
      ['events', event.replace('"seq":2', '"seq":0x2')],
      ['events', event.replace('"seq":2', '"seq":"2"')],
      ['state', state.replace(/}$/, ',"status":"completed"}')],
      ['state', state.replace(/^{/, '{"status":"completed",')],
      ['state', state.replace('"seq":2', '"seq":2.0')],
    ];
    const attacker = await connectPlainClient(broker.url);
    for (const [kind, body] of hostile) await attacker.publishAsync(`${ROOT}/${id}/${kind}`, body, { qos: 1 });
    await attacker.endAsync();
    const rejected = () => auditOf(ws, id).filter((l) => l.type === 'rejected');
    expect(await waitUntil(() => rejected().length >= hostile.length, 10_000), JSON.stringify(auditOf(ws, id))).toBe(true);
    expect(rejected()).toHaveLength(hostile.length);
    // A duplicate key is no JSON we read (`json`); a seq that is no integer lexeme fails the schema.
    expect(rejected().map((l) => l.reason)).toEqual(['json', 'json', 'json', 'schema', 'schema', 'json', 'schema', 'json', 'json', 'schema']);

    const done = await runBin('mam-publish', ['--job', id, '--event', 'completed', '--detail', 'legit done'], ws);
    expect(done.code, done.stderr).toBe(0);
    const res = await sub.done;
    expect(res.code, res.stderr).toBe(0);
    expect(jsonLines(res.stdout).map((l) => [l.seq, l.event, l.detail])).toEqual([
      [1, 'started', 'legit'],
      [2, 'completed', 'legit done'],
    ]);
    expect(recordOf(ws, id)).toMatchObject({ status: 'completed', last_seq: 2 });
    ws.cleanup();
  });
});
