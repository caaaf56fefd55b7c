import { describe, expect, it } from 'vitest';
import { parseWireJson } from '../../src/core/wire/canonical-json.ts';
import { verifyPayload } from '../../src/core/wire/signature.ts';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { runBinAsync } from '../helpers/cli.ts';
import { auditOf, brokerWorkspace, deadPort, recordOf, register } from '../publisher/publish-fixtures.ts';
import { startWatcher, stderrBesidesSubscribed } from './watcher.ts';

/**
 * `mam-subscribe` without a usable broker (contract §4): exit 3 after about 5 s of failed first
 * connects or at once on refused credentials, unless the registry already knows the outcome
 * (disk fallback: one line, the job's exit code).
 */

describe('mam-subscribe with the broker down', () => {
  it('an unresolved job → exit 3 after about 5 s of failed connects', async () => {
    const ws = brokerWorkspace(await deadPort());
    const id = 'c300000c';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id]);
    const exit = await w.exit(12_000);
    expect(exit.code).toBe(3);
    expect(exit.ms).toBeGreaterThanOrEqual(4_500);
    expect(exit.ms).toBeLessThan(9_000);
    expect(exit.stdout).toBe('');
    expect(exit.stderr).not.toMatch(/SUBSCRIBED/);
    expect(exit.stderr).toMatch(new RegExp(`^ERROR: broker mqtt://127\\.0\\.0\\.1:\\d+ unreachable; unresolved: ${id}\\n$`));
  });

  it('disk fallback: a job completed in the registry prints its terminal event once and exits 0', async () => {
    const ws = brokerWorkspace(await deadPort());
    const id = 'c300000d';
    const rec = await register(ws, id);
    // Recorded on disk, never delivered (exit 2): the registry knows the outcome, the broker does not.
    const done = await runBinAsync('mam-publish', ['--job', id, '--event', 'completed', '--detail', 'all green', '--attempts', '1'], ws);
    expect(done.code).toBe(2);
    const w = startWatcher(ws, ['--job', id]);
    const exit = await w.exit(4_000);
    expect(exit.code).toBe(0);
    expect(w.events()).toHaveLength(1);
    expect(w.events()[0]).toMatchObject({ job_id: id, seq: 1, event: 'completed', detail: 'all green' });
    expect(verifyPayload(parseWireJson(w.lines()[0]!), rec.auth_token)).toBe(true);
    expect(stderrBesidesSubscribed(exit.stderr)).toBe('');
  });

  it('disk fallback: the printed terminal event keeps its number lexemes (1.0, a big integer) and still verifies', async () => {
    const ws = brokerWorkspace(await deadPort());
    const id = 'c3000010';
    const rec = await register(ws, id);
    const data = '{"ratio":1.0,"big":123456789012345678901234567890,"small":1e-7}';
    expect((await runBinAsync('mam-publish', ['--job', id, '--event', 'completed', '--data', data, '--attempts', '1'], ws)).code).toBe(2);
    const w = startWatcher(ws, ['--job', id]);
    expect((await w.exit(4_000)).code).toBe(0);
    const line = w.lines()[0]!;
    expect(line).toContain('"ratio":1.0');
    expect(line).toContain('"big":123456789012345678901234567890');
    expect(line).toContain('"small":1e-07');
    expect(verifyPayload(parseWireJson(line), rec.auth_token)).toBe(true);
  });

  it('disk fallback: a job closed by an operator prints a state line built from the record and exits 1', async () => {
    const ws = brokerWorkspace(await deadPort());
    const id = 'c300000e';
    const rec = await register(ws, id);
    expect((await runBinAsync('mam-close', ['--job', id, '--request', 'deadline_timeout'], ws)).code).toBe(0);
    const w = startWatcher(ws, ['--job', id]);
    const exit = await w.exit(4_000);
    expect(exit.code).toBe(1);
    expect(w.events()).toEqual([expect.objectContaining({ job_id: id, event: 'state', status: 'error', last_event: 'deadline_timeout' })]);
    expect(verifyPayload(parseWireJson(w.lines()[0]!), rec.auth_token)).toBe(true);
    expect(recordOf(ws, id).status).toBe('error');
    expect(auditOf(ws, id).some((l) => l.type === 'rejected')).toBe(false);
  });
});

describe('mam-subscribe refused by the broker', () => {
  useBrokerCleanup();

  it('bad credentials → exit 3 at once, one line naming the broker and the user', async () => {
    const broker = await startAedesBroker({ auth: { username: 'watcher', password: 'right-pass' } });
    const ws = brokerWorkspace(broker.port, { MQTT_USERNAME: 'watcher', MQTT_PASSWORD: 'wrong-pass-456' });
    const id = 'c300000f';
    await register(ws, id);
    const w = startWatcher(ws, ['--job', id]);
    const exit = await w.exit(8_000);
    expect(exit.code).toBe(3);
    expect(exit.ms).toBeLessThan(4_000);
    expect(exit.stdout).toBe('');
    expect(exit.stderr).toMatch(new RegExp(`^ERROR: broker mqtt://127\\.0\\.0\\.1:${broker.port} refused user watcher: [^\\n]+\\n$`));
    expect(exit.stderr).not.toContain('wrong-pass-456');
  });
});
