import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { HeartbeatLoop } from '../../src/core/heartbeat/heartbeat-loop.ts';
import { Registry } from '../../src/core/registry/registry.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { buildStatePayload } from '../../src/core/wire/payloads.ts';
import { signPayload } from '../../src/core/wire/signature.ts';
import { startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { makeWorkspace, type Workspace } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { killAll, runBin, sleep, spawnBin, spawnProc, waitUntil } from './chaos-kit.ts';
import { bundleRegistry } from '../core/registry/fixtures/processes.ts';
import { auditOf, checkRegistry, eventsFileOf, logDirOf, recordOf, registryDirOf } from './disk-invariants.ts';

/**
 * One regression test per defect the fault-injection suite found (docs/reliability.md), each small
 * and deterministic, so that the defect cannot come back unnoticed between long chaos runs.
 */

const workspaces: Workspace[] = [];
afterEach(async () => {
  await killAll();
  for (const ws of workspaces.splice(0)) ws.cleanup();
});

function workspace(env: NodeJS.ProcessEnv): { ws: Workspace; registry: Registry } {
  const ws = makeWorkspace(env);
  workspaces.push(ws);
  return { ws, registry: new Registry({ registryDir: registryDirOf(ws), logDir: logDirOf(ws) }, () => undefined) };
}

const job = { brief: 'regression', heartbeatSec: 30, heartbeatMisses: 4, ackTimeoutSec: 180, timeoutSec: 3600, transport: 'herdr' as const, dependsOn: [] };

describe('defect 1: the one-shot publisher idled past its keepalive while it waited for the registry lock', () => {
  useBrokerCleanup();

  it('mam-publish --attempts 1 that waits 3 s for the lock still delivers with MQTT_KEEPALIVE=1', { timeout: 30_000 }, async () => {
    const broker = await startAedesBroker();
    const { ws, registry } = workspace({ MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port), MQTT_KEEPALIVE: '1' });
    const { job_id: id } = await registry.register(job);
    // The connection is opened before the registry work; holding the lock keeps it idle for 4 s,
    // well past the 1.5 keepalive periods after which the broker drops a silent client.
    let publish: ReturnType<typeof spawnBin> | undefined;
    await registry.withLock(async () => {
      publish = spawnBin('mam-publish', ['--job', id, '--event', 'progress', '--attempts', '1'], ws);
      await sleep(3_000);
    });
    const r = await publish!.done;
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ job_id: id, seq: 1, event: 'progress' });
  });
});

describe('defect 2: a SIGKILL between the record write and its audit line left a seq without its published line', () => {
  let bundle: string;
  beforeAll(async () => {
    bundle = await bundleRegistry(mkdtempSync(path.join(os.tmpdir(), 'mam-chaos-bundle-')));
  });

  /**
   * A child commits one event for `id` through the Registry, and SIGKILLs itself at `when`:
   * `record-written` (the record file was renamed into place) or `audit-written` (right after the
   * commit's audit lines, before the record write could finish).
   */
  async function commitAndDie(ws: Workspace, id: string, when: 'record-written' | 'audit-written') {
    const script = `
      import { watch } from 'node:fs';
      const { Registry } = await import(${JSON.stringify(pathToFileURL(bundle).href)});
      const registry = new Registry({ registryDir: ${JSON.stringify(registryDirOf(ws))}, logDir: ${JSON.stringify(logDirOf(ws))} }, () => undefined);
      const die = () => process.kill(process.pid, 'SIGKILL');
      if (${JSON.stringify(when)} === 'record-written') watch(${JSON.stringify(registryDirOf(ws))}, (_e, name) => { if (name === '${id}.json') die(); });
      await registry.update('${id}', { kind: 'event', event: 'progress' }, 'agent', {
        audit: (next, seq) => {
          if (${JSON.stringify(when)} === 'audit-written') process.nextTick(die);
          return [{ type: 'published', seq, event: 'progress', payload: { seq } }];
        },
      });
      await new Promise((r) => setTimeout(r, 5000));
    `;
    const r = await spawnProc(process.execPath, ['--input-type=module', '-e', script], { cwd: ws.root, env: ws.env }).done;
    expect(r.signal, r.stderr).toBe('SIGKILL');
  }

  it('killed as soon as the record holds the new seq: the seq already has its published line', { timeout: 30_000 }, async () => {
    const { ws, registry } = workspace({});
    const { job_id: id } = await registry.register(job);
    await commitAndDie(ws, id, 'record-written');
    expect(recordOf(ws, id).last_seq).toBe(1);
    expect(checkRegistry(ws).seqProblems).toEqual([]);
  });

  it('killed between its published line and the record (twice): the next event skips those seqs and marks them aborted', { timeout: 30_000 }, async () => {
    const { ws, registry } = workspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: '1' });
    const { job_id: id } = await registry.register(job);
    // Twice in a row: the second one skips the first's seq, then dies the same way.
    for (let i = 0; i < 2; i++) {
      await commitAndDie(ws, id, 'audit-written');
      // The child died holding the lock; its takeover (about 5 s) is tested elsewhere.
      rmSync(path.join(registryDirOf(ws), '.lock'), { recursive: true, force: true });
    }
    expect(recordOf(ws, id).last_seq).toBe(0);
    expect(checkRegistry(ws).seqProblems).toEqual([]);
    const r = await runBin('mam-publish', ['--job', id, '--event', 'progress', '--attempts', '1'], ws);
    expect(r.code, r.stderr).toBe(2); // no broker here: recorded, not delivered
    expect(recordOf(ws, id).last_seq).toBe(3);
    expect(checkRegistry(ws).seqProblems).toEqual([]);
    const audit = auditOf(ws, id);
    expect(audit.filter((l) => l.type === 'publish_failed' && /aborted/.test(l.reason as string)).map((l) => l.seq)).toEqual([1, 2]);
    expect(audit.filter((l) => l.type === 'published').map((l) => l.seq)).toEqual([1, 2, 3]);
  });

  it('the last published seq is found from the end of a big audit log, across chunk boundaries', () => {
    const { registry } = workspace({});
    const id = 'c0ffee01';
    const big = 'é'.repeat(70_000); // a line longer than one read, with multi-byte characters
    registry.audit.append(id, { type: 'published', seq: 6, event: 'progress', payload: { detail: big } });
    registry.audit.append(id, { type: 'published', seq: 7, event: 'progress', payload: { detail: big } });
    for (let i = 0; i < 2_000; i++) registry.audit.append(id, { type: 'rejected', reason: 'hmac', detail: `forged ${i} ü` });
    registry.audit.append(id, { type: 'published', event: 'dispatch', session: 'S' });
    expect(registry.audit.lastPublishedSeq(id)).toBe(7);
    expect(registry.audit.lastPublishedSeq('c0ffee02')).toBe(0);
  });

  it('an aborted terminal line is never taken for the outcome by the disk fallback', { timeout: 30_000 }, async () => {
    const { ws, registry } = workspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: '1' });
    const { job_id: id } = await registry.register(job);
    // What a `completed` publisher killed before its commit leaves: the payload line, no record change.
    appendFileSync(
      eventsFileOf(ws, id),
      `${JSON.stringify({ type: 'published', seq: 1, event: 'completed', payload: { seq: 1, event: 'completed', data: { attempt_id: 1 } } })}\n`,
    );
    await registry.close(id, 'cancelled');
    const r = await runBin('mam-subscribe', ['--job', id], ws);
    expect(r.code, r.stderr).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ event: 'state', status: 'cancelled' });
  });
});

describe('defect 3: the remote runner dropped replayed dispatches and forged cancels without a word', () => {
  useBrokerCleanup();

  it('a replayed dispatch and a forged cancel are logged and audited with their reason; neither acts', { timeout: 60_000 }, async () => {
    const broker = await startAedesBroker();
    const env = { MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port), MAM_DISPATCH_SECRET: 'regression-secret' };
    const { ws: delegator } = workspace(env);
    const { ws: host } = workspace(env);
    const ranLog = path.join(host.root, 'ran.log');
    const runner = spawnBin('mam-remote', ['run', '--session', 'R', '--exec', `echo "$JOB_ID" >> ${ranLog}; sleep 2`], host);
    await runner.waitStderr(/^SUBSCRIBED remote runner/m);
    const attacker = await connectPlainClient(broker.url);
    const copies: Buffer[] = [];
    attacker.on('message', (_t, p) => p.length > 0 && copies.push(Buffer.from(p)));
    await attacker.subscribeAsync('python/mqtt/jobs/+/dispatch', { qos: 1 });
    const id = (JSON.parse((await runBin('mam-register', ['--brief', 'b'], delegator)).stdout) as { job_id: string }).job_id;
    expect((await runBin('mam-remote', ['dispatch', '--job', id, '--session', 'R'], delegator)).code).toBe(0);
    // While it runs: a cancel signed with a token that is not the job's.
    expect(await waitUntil(() => existsSync(ranLog), 10_000)).toBe(true);
    const forged = signPayload(
      buildStatePayload({
        jobId: id,
        seq: 9,
        status: 'cancelled',
        lastEvent: 'cancelled',
        detail: 'x',
        dispatchToken: recordOf(host, id).dispatch_token,
        attemptId: 1,
      }),
      'not-the-token',
    );
    await attacker.publishAsync(`python/mqtt/jobs/${id}/state`, wireJson(forged), { qos: 1 });
    expect(await waitUntil(() => recordOf(host, id).status === 'completed', 15_000), runner.stderr).toBe(true);
    // Then the real dispatch again, byte for byte.
    await attacker.publishAsync(`python/mqtt/jobs/${id}/dispatch`, copies[0]!, { qos: 1 });
    expect(await waitUntil(() => auditOf(host, id).some((l) => l.type === 'rejected' && l.reason === 'replay'), 10_000), runner.stderr).toBe(true);
    await attacker.endAsync(true);
    expect(readFileSync(ranLog, 'utf8')).toBe(`${id}\n`);
    expect(
      auditOf(host, id)
        .filter((l) => l.type === 'rejected')
        .map((l) => l.reason),
    ).toEqual(['hmac', 'replay']);
    expect(runner.stderr).toMatch(/"reason":"replay".*"msg":"dispatch rejected"/);
  });
});

/** A `--require` shim that moves a process's wall clock (Date.now, new Date()) by `offsetMs`, as libfaketime would. */
function clockShim(offsetMs: number): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'mam-chaos-shim-')), 'shift-clock.cjs');
  writeFileSync(
    file,
    `const Real = Date; const off = ${offsetMs};
     class Shifted extends Real { constructor(...a) { if (a.length === 0) super(Real.now() + off); else super(...a); } static now() { return Real.now() + off; } }
     globalThis.Date = Shifted;`,
  );
  return file;
}

describe('defect 4: a command whose wall clock ran ahead broke a live registry lock', () => {
  it('a waiter a day ahead waits for the live holder instead of taking its lock', { timeout: 30_000 }, async () => {
    const { ws, registry } = workspace({});
    await registry.register(job);
    const env = { NODE_OPTIONS: `--require ${clockShim(86_400_000)}` };
    let waiter: ReturnType<typeof spawnBin> | undefined;
    const t0 = Date.now();
    // The holder lives in this process: proper-lockfile refreshes the lock's mtime every second.
    await registry.withLock(async () => {
      waiter = spawnBin('mam-register', ['--brief', 'from tomorrow'], ws, env);
      await sleep(3_000);
    });
    const r = await waiter!.done;
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2_900);
  });

  it('a lock left by a dead holder is still taken over, by a waiter whose clock runs a day behind too', { timeout: 30_000 }, async () => {
    const { ws, registry } = workspace({});
    await registry.register(job);
    mkdirSync(path.join(registryDirOf(ws), '.lock'));
    const t0 = Date.now();
    const r = await runBin('mam-register', ['--brief', 'from yesterday'], ws, { NODE_OPTIONS: `--require ${clockShim(-86_400_000)}` });
    expect(r.code, r.stderr).toBe(0);
    // Watched unchanged for the stale period on its monotonic clock: about 5 s, not a day.
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});

describe('defect 5: the heartbeat scheduled its beats on the wall clock', () => {
  it('a step back of a day does not postpone the next beat by a day', { timeout: 10_000 }, async () => {
    const began: number[] = [];
    const loop = new HeartbeatLoop(
      { stopReason: () => undefined, beat: async () => void began.push(performance.now()) },
      { periodMs: 200, lifetimeMs: 60_000, settleMs: 100 },
    );
    loop.start();
    await sleep(450);
    expect(began.length).toBeGreaterThanOrEqual(2);
    const realNow = Date.now.bind(Date);
    const spy = vi.spyOn(Date, 'now').mockImplementation(() => realNow() - 86_400_000);
    try {
      const before = began.length;
      await sleep(1_000);
      expect(began.length - before).toBeGreaterThanOrEqual(3);
    } finally {
      spy.mockRestore();
      loop.stop('test');
    }
    await loop.stopped;
  });
});

describe('defect 6: a cancel that reached the runner before its agent started was lost', () => {
  useBrokerCleanup();

  it('a job cancelled by the delegator before the runner took it never runs its command', { timeout: 40_000 }, async () => {
    const broker = await startAedesBroker();
    const env = { MQTT_BROKER: broker.host, MQTT_PORT: String(broker.port), MAM_DISPATCH_SECRET: 'regression-secret' };
    const { ws: delegator } = workspace(env);
    const { ws: host } = workspace(env);
    const ranLog = path.join(host.root, 'ran.log');
    const id = (JSON.parse((await runBin('mam-register', ['--brief', 'b', '--heartbeat', '1'], delegator)).stdout) as { job_id: string }).job_id;
    expect((await runBin('mam-remote', ['dispatch', '--job', id, '--session', 'R'], delegator)).code).toBe(0);
    // Cancelled while the dispatch waits, retained: the runner hears the cancel right as it takes the job.
    expect((await runBin('mam-close', ['--job', id, '--request', 'cancelled'], delegator)).code).toBe(0);
    const t0 = Date.now();
    const r = await runBin('mam-remote', ['run', '--session', 'R', '--once', '--exec', `echo ran >> ${ranLog}; sleep 20`], host, {}, 30_000);
    expect(r.code, r.stderr).toBe(1);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(existsSync(ranLog)).toBe(false);
    expect(recordOf(host, id)).toMatchObject({ status: 'cancelled' });
    const published = auditOf(host, id)
      .filter((l) => l.type === 'published')
      .map((l) => l.event);
    expect(published.filter((e) => e === 'completed' || e === 'error')).toEqual([]);
  });
});
