import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { signPresence } from '../../src/core/fleet/presence.ts';
import { wireJson } from '../../src/core/wire/canonical-json.ts';
import { buildEventPayload } from '../../src/core/wire/payloads.ts';
import { signPayload } from '../../src/core/wire/signature.ts';
import { spawnBin } from '../brokers/bin-process.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import type { Workspace } from '../helpers/cli.ts';
import { runInProcess } from '../helpers/in-process.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { waitUntil } from '../helpers/wait.ts';
import { auditOf, recordOf } from '../publisher/publish-fixtures.ts';
import { fleetAudit, fleetWorkspace, publishEvent, runningJob, startMonitor } from './fleet-fixtures.ts';

/**
 * Missed signals (docs/coordination-reference.md, "Missed signals"): an agent that was offline asks
 * `mam inbox --agent N` at session start and gets, once, the pending jobs addressed to it (by name
 * or capability) and the alerts a monitor raised about it meanwhile. What a forger put on the
 * broker never gets there.
 */

interface InboxOut {
  agent: string;
  jobs: Array<{ job_id: string; to?: string; auth_token?: string }>;
  alerts: Array<{ alert: string; job_id: string | null; agent: string | null; detail: string }>;
}

async function inbox(ws: Workspace, agent: string, ...args: string[]): Promise<InboxOut> {
  const r = await runInProcess('mam', ['inbox', '--agent', agent, ...args], ws);
  if (r.code !== 0) throw new Error(`mam inbox exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as InboxOut;
}

async function register(ws: Workspace, id: string, ...args: string[]): Promise<void> {
  const r = await runInProcess('mam-register', ['--job-id', id, '--brief', `job ${id}`, ...args], ws);
  if (r.code !== 0) throw new Error(`mam-register ${id}: ${r.stderr}`);
}

const ids = (n: number) => {
  const base = randomBytes(2).toString('hex');
  return Array.from({ length: n }, (_, i) => `${base}${String(i).padStart(4, '0')}`);
};

describe('mam inbox', () => {
  useBrokerCleanup();
  let broker: TestBroker;

  it('an agent back from offline gets the jobs and alerts addressed to it meanwhile, once; forgeries raise nothing', { timeout: 60_000 }, async () => {
    broker ??= await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const name = `rev-${randomBytes(3).toString('hex')}`;
    const [held, forName, forCap, forOther, forGpu, forAnyone, later] = ids(7);
    const mon = await startMonitor(ws);
    const up = spawnBin('mam', ['agent', 'up', '--name', name, '--capabilities', 'review,ts', '--refresh', '1'], ws);
    await up.waitForStderr(new RegExp(`^ONLINE ${name} `, 'm'));
    await runningJob(ws, held!, name);
    // Session start: nothing yet. This also places the agent's cursor.
    expect(await inbox(ws, name)).toEqual({ agent: name, jobs: [], alerts: [], invitations: [] });

    // Forgeries on the broker: an `offline` presence for the agent under another secret, and an
    // `error` for its job signed with a made-up token. Neither may raise an alert.
    const client = await connectPlainClient(broker.url);
    const now = new Date().toISOString();
    const forgedPresence = signPresence(
      { agent: name, host: 'evil', capabilities: [], status: 'offline', reason: 'shutdown', since: now, refreshSec: 1 },
      'not-the-secret',
    );
    await client.publishAsync(`python/mqtt/agents/${name}`, forgedPresence, { qos: 1 });
    const record = recordOf(ws, held!);
    const event = buildEventPayload({
      jobId: held!,
      seq: 50,
      event: 'error',
      detail: 'FORGED',
      dispatchToken: record.dispatch_token,
      attemptId: record.attempt_id,
    });
    await client.publishAsync(`python/mqtt/jobs/${held}/events`, wireJson(signPayload(event, 'x'.repeat(43))), { qos: 1 });
    const { data, ...unsigned } = event;
    await client.publishAsync(`python/mqtt/jobs/${held}/events`, JSON.stringify({ ...unsigned, data: { attempt_id: 1 } }), { qos: 1 });
    await client.endAsync(true);
    expect(await waitUntil(() => fleetAudit(ws).some((e) => e.type === 'rejected' && e.what === 'presence' && e.agent === name), 10_000)).toBe(true);
    expect(await waitUntil(() => auditOf(ws, held!).filter((e) => e.type === 'rejected').length === 2, 10_000)).toBe(true);
    expect(
      auditOf(ws, held!)
        .filter((e) => e.type === 'rejected')
        .map((e) => e.reason),
    ).toEqual(['hmac', 'schema']);

    // The agent dies (Last Will); while it is away, work is addressed to it and its job fails.
    up.kill('SIGKILL');
    await mon.waitForAlert({ alert: 'agent_offline', agent: name });
    await register(ws, forName!, '--to', name);
    await register(ws, forCap!, '--to', 'capability:review');
    await register(ws, forOther!, '--to', 'someone-else');
    await register(ws, forGpu!, '--to', 'capability:gpu');
    await register(ws, forAnyone!);
    await publishEvent(ws, held!, 'error', '--detail', 'agent vanished');
    await mon.waitForAlert({ alert: 'failed', job_id: held! });
    expect(
      mon
        .alerts()
        .filter((a) => a.agent === name)
        .map((a) => a.alert),
    ).toEqual(['agent_offline', 'failed']);

    // Back: its capabilities come from the card `mam agent up` left on this registry.
    const back = await inbox(ws, name);
    expect(back.jobs.map((j) => j.job_id)).toEqual([forName, forCap]);
    expect(back.jobs.every((j) => j.auth_token === undefined)).toBe(true);
    expect(back.alerts).toEqual([
      expect.objectContaining({ alert: 'agent_offline', agent: name, job_id: held, detail: 'connection lost (Last Will)' }),
      expect.objectContaining({ alert: 'failed', agent: name, job_id: held, detail: 'agent vanished' }),
    ]);
    expect(JSON.stringify(back)).not.toContain('FORGED');
    // Once: asking again gives nothing, until something new is addressed to it.
    expect(await inbox(ws, name)).toEqual({ agent: name, jobs: [], alerts: [], invitations: [] });
    await register(ws, later!, '--to', `capability:ts`);
    expect((await inbox(ws, name)).jobs.map((j) => j.job_id)).toEqual([later]);
    expect(await inbox(ws, name)).toEqual({ agent: name, jobs: [], alerts: [], invitations: [] });
    // Another agent's inbox is its own: it still gets what was addressed to it.
    expect((await inbox(ws, 'someone-else')).jobs.map((j) => j.job_id)).toEqual([forOther]);
    mon.proc.kill('SIGTERM');
    expect((await mon.proc.result).code).toBe(0);
  });

  it('two sessions of one agent asking at once split the items: each delivered exactly once', async () => {
    broker ??= await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const jobs = ids(6);
    for (const id of jobs) await register(ws, id, '--to', 'capability:docs');
    const both = await Promise.all([inbox(ws, 'doc-1', '--capabilities', 'docs'), inbox(ws, 'doc-1', '--capabilities', 'docs')]);
    const got = both.flatMap((b) => b.jobs.map((j) => j.job_id));
    expect(got.sort()).toEqual(jobs);
  });

  it('ignores lines of the alerts file that are not alerts; refuses a bad name or capability (exit 64)', async () => {
    broker ??= await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const file = path.join(ws.root, '.mam', 'logs', 'fleet-alerts.ndjson');
    const good = { alert: 'stalled', job_id: 'abcd0001', agent: 'w1', detail: 'no accepted event for 5 s (window 4 s)', at: new Date().toISOString() };
    // A kind that does not exist, a missing detail, a torn line, then a genuine line.
    expect((await inbox(ws, 'w1')).alerts).toEqual([]);
    mkdirSync(path.dirname(file), { recursive: true });
    appendFileSync(
      file,
      `${JSON.stringify({ ...good, alert: 'all_clear' })}\n${JSON.stringify({ alert: 'failed', agent: 'w1' })}\n{"alert":\n${JSON.stringify(good)}\n`,
    );
    expect((await inbox(ws, 'w1')).alerts).toEqual([good]);
    expect(readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(4);
    for (const args of [
      ['--agent', '../x'],
      ['--agent', 'w1', '--capabilities', 'a b'],
    ]) {
      const r = await runInProcess('mam', ['inbox', ...args], ws);
      expect(r.code).toBe(64);
      expect(r.stderr).toMatch(/^ERROR: /);
    }
  });
});

describe('mam inbox --text: the session-start step', () => {
  useBrokerCleanup();

  it('one line per missed item for a SessionStart hook, once; nothing at all when nothing was missed', { timeout: 30_000 }, async () => {
    const broker = await startAedesBroker();
    const ws = fleetWorkspace(broker.port);
    const name = `rev-${randomBytes(3).toString('hex')}`;
    const text = async () => {
      const r = await runInProcess('mam', ['inbox', '--agent', name, '--text'], ws);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      return r.stdout;
    };
    // The first ask places the cursor: a quiet start prints nothing, so the model reads nothing.
    expect(await text()).toBe('');
    const [forName, forCap] = ids(2);
    await register(ws, forName!, '--to', name);
    await runInProcess('mam-register', ['--job-id', forCap!, '--brief', 'Review PR 12\nthe long part of the brief', '--to', 'capability:review'], ws);
    const lines = (await runInProcess('mam', ['inbox', '--agent', name, '--capabilities', 'review', '--text'], ws)).stdout.split('\n');
    expect(lines).toEqual([
      `MAM inbox for ${name}: 2 jobs and 0 alerts since you last asked.`,
      `- job ${forName} (to ${name}, pending): job ${forName} — take it with: mam-pick --agent-session ${name}`,
      `- job ${forCap} (to capability:review, pending): Review PR 12 — take it with: mam-pick --agent-session ${name}`,
      '',
    ]);
    expect(await text()).toBe('');
    expect((await runInProcess('mam', ['inbox', '--agent', name, '--text', '--json'], ws)).code).toBe(64);
  });
});
