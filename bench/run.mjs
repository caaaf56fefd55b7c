// `npm run bench`: each benchmark is a ratio against a baseline measured in the same run, on the
// same broker. Results go to bench/results/latest.json and the table in bench/README.md.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { connectAsync } from 'mqtt';
import { bundleAlias } from '../scripts/bundle-alias.mjs';
import { ROOT, bin, cpuMs, peakRssKiB, procStatus, run, signedEvent, startMosquitto, stats, workspace, writeRecord } from './lib.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 21);
const node = process.execPath;
const results = {
  machine: { node: process.version, cpus: os.cpus().length, extraCaCerts: Boolean(process.env.NODE_EXTRA_CA_CERTS) },
  at: new Date().toISOString(),
};
const broker = await startMosquitto();
const brokerEnv = { MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port), MAM_LOG_LEVEL: 'warn' };
const extraCa = process.env.NODE_EXTRA_CA_CERTS;

function registerJob(ws) {
  return JSON.parse(run(node, [bin('mam-register'), '--brief', 'bench'], ws).stdout).job_id;
}

// 1. Publish latency: alternated rounds, so machine noise hits every contender alike.
const floorBundle = path.join(mkdtempSync(path.join(os.tmpdir(), 'mam-bench-floor-')), 'mqtt-packet-publish.cjs');
await build({
  entryPoints: [path.join(ROOT, 'bench/baselines/mqtt-packet-publish.cjs')],
  outfile: floorBundle,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  alias: bundleAlias,
  logLevel: 'warning',
});
{
  const ws = workspace(brokerEnv);
  const job = registerJob(ws);
  const python = ['/usr/bin/python3', 'python3'].find((p) => p === 'python3' || existsSync(p));
  const hasPaho = run(python, ['-c', 'import paho.mqtt'], ws).status === 0;
  const contenders = {
    // Every contender runs with the workspace's environment, which has no NODE_EXTRA_CA_CERTS; the
    // second row adds the machine's, when it sets one (Node then loads that CA bundle at start).
    'mam-publish': () => run(node, [bin('mam-publish'), '--job', job, '--event', 'progress'], ws),
    ...(extraCa
      ? {
          'mam-publish (with NODE_EXTRA_CA_CERTS)': () =>
            run(node, [bin('mam-publish'), '--job', job, '--event', 'progress'], ws, { NODE_EXTRA_CA_CERTS: extraCa }),
        }
      : {}),
    // The same without bin/load-bundle.cjs's V8 code cache: what a first run after an install costs.
    'mam-publish (MAM_CODE_CACHE=0)': () => run(node, [bin('mam-publish'), '--job', job, '--event', 'progress'], ws, { MAM_CODE_CACHE: '0' }),
    // What every Node contender pays before its first line runs.
    'node -e 0 (Node starting, nothing else)': () => run(node, ['-e', '0'], ws),
    // The smallest Node publisher on the stack's wire library, bundled and code-cached like a bin.
    'mqtt-packet floor (bundled)': () => run(node, [path.join(ROOT, 'bin/load-bundle.cjs'), floorBundle, '127.0.0.1', String(broker.port)], ws),
    'MQTT.js minimal script': () => run(node, [path.join(ROOT, 'bench/baselines/mqtt-js-publish.mjs'), '127.0.0.1', String(broker.port)], ws),
    ...(hasPaho
      ? { 'Python paho-mqtt script': () => run(python, [path.join(ROOT, 'bench/baselines/paho-publish.py'), '127.0.0.1', String(broker.port)], ws) }
      : {}),
    'mosquitto_pub -q 1 (one message)': () =>
      run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(broker.port), '-q', '1', '-t', 'bench/c/events', '-m', '{}'], ws),
  };
  const samples = Object.fromEntries(Object.keys(contenders).map((k) => [k, []]));
  for (let i = 0; i < ROUNDS; i++) for (const [k, f] of Object.entries(contenders)) samples[k].push(f().ms);
  results.publish = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)]));
  results.publish.peakRssMiB = peakRssKiB(node, [bin('mam-publish'), '--job', job, '--event', 'progress'], ws) / 1024;
  if (!hasPaho) results.publish.note = 'python3-paho-mqtt not installed: the paho baseline was skipped';
}

// 2. Monitor throughput: signed events over 100 jobs, mam-subscribe --all vs mosquitto_sub. Each
// reader is stopped (SIGSTOP) while the events are queued on the broker, then resumed: ev/s counts
// from SIGCONT to its last line, so it is the reader's own speed, not the publisher's (on 2 cores a
// live publisher was the bottleneck of both). Readers drain one at a time, alternated, 3 rounds.
async function monitor(total) {
  const ws = workspace(brokerEnv);
  const recs = Array.from({ length: 100 }, (_, i) =>
    writeRecord(ws, (0x10000000 + i).toString(16), 'running', new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString()),
  );
  const payloads = Array.from({ length: total }, (_, i) => {
    const rec = recs[i % 100];
    return [`python/mqtt/jobs/${rec.job_id}/events`, signedEvent(rec, Math.floor(i / 100) + 1)];
  });
  const pub = await connectAsync({ host: '127.0.0.1', port: broker.port, protocolVersion: 4 });
  const drain = async (cmd, args) => {
    const child = spawn(cmd, args, { cwd: ws.root, env: ws.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let lines = 0;
    let last = 0;
    let hwm = 0;
    await new Promise((resolve) => {
      if (cmd === 'mosquitto_sub') setTimeout(resolve, 700);
      child.stderr.on('data', (d) => d.toString().includes('SUBSCRIBED') && resolve());
    });
    child.stdout.on('data', (d) => {
      for (const c of d) if (c === 10) lines++;
      last = performance.now();
      try {
        hwm = procStatus(child.pid).hwmKiB;
      } catch {}
    });
    child.kill('SIGSTOP');
    await Promise.all(payloads.map(([t, p]) => pub.publishAsync(t, p, { qos: 1 })));
    const t0 = performance.now();
    child.kill('SIGCONT');
    const deadline = Date.now() + 120_000;
    while (lines < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGTERM');
    await exited;
    return { received: lines, eventsPerSec: Math.round(lines / ((last - t0) / 1000)), peakRssMiB: hwm / 1024 };
  };
  const runs = { mam: [], raw: [] };
  for (let round = 0; round < 3; round++) {
    runs.mam.push(await drain(node, [bin('mam-subscribe'), '--all']));
    runs.raw.push(
      await drain('mosquitto_sub', [
        '-h',
        '127.0.0.1',
        '-p',
        String(broker.port),
        '-q',
        '1',
        '-c',
        '-i',
        `bench-raw-${total}-${round}`,
        '-t',
        'python/mqtt/jobs/+/events',
      ]),
    );
  }
  await pub.endAsync();
  const median = (xs) => [...xs].sort((a, b) => a.eventsPerSec - b.eventsPerSec)[1];
  return { events: total, 'mam-subscribe --all': median(runs.mam), mosquitto_sub: median(runs.raw), rounds: runs };
}
results.monitor = { small: await monitor(2_000), large: await monitor(20_000) };

// 3. Registry scale: pick and publish with 10, 1,000 and 10,000 jobs (most of them finished).
results.scale = {};
for (const size of [10, 1_000, 10_000]) {
  const ws = workspace(brokerEnv);
  const pending = 30;
  for (let i = 0; i < size; i++)
    writeRecord(ws, (0x20000000 + i).toString(16), i < size - pending ? 'completed' : 'pending', new Date(Date.UTC(2026, 0, 1) + i).toISOString());
  run(node, [bin('mam-pick'), '--agent-session', 'warm'], ws); // builds the pick index once
  const picks = [];
  const publishes = [];
  const job = (0x20000000 + size - 1).toString(16);
  for (let i = 0; i < 11; i++) {
    picks.push(run(node, [bin('mam-pick'), '--agent-session', 's'], ws).ms);
    publishes.push(run(node, [bin('mam-publish'), '--job', job, '--event', 'progress'], ws).ms);
  }
  results.scale[size] = { pick: stats(picks), publish: stats(publishes) };
}

// 4. Contention: 8 publishers on one job, 8 pickers on one registry.
{
  const ws = workspace(brokerEnv);
  const job = registerJob(ws);
  const par = (n, args) =>
    Promise.all(
      Array.from({ length: n }, () => new Promise((resolve) => spawn(node, args, { cwd: ws.root, env: ws.env, stdio: 'ignore' }).on('exit', resolve))),
    );
  let t = performance.now();
  for (let i = 0; i < 5; i++) await par(8, [bin('mam-publish'), '--job', job, '--event', 'progress']);
  const pubSecs = (performance.now() - t) / 1000;
  const seqs = readFileSync(path.join(ws.root, '.mam/logs', job, 'events.ndjson'), 'utf8')
    .split('\n')
    .filter((l) => l.includes('"published"'))
    .map((l) => JSON.parse(l).seq)
    .sort((a, b) => a - b);
  for (let i = 0; i < 40; i++) writeRecord(ws, (0x30000000 + i).toString(16), 'pending', new Date(Date.UTC(2026, 0, 2) + i).toISOString());
  t = performance.now();
  const claimed = [];
  await Promise.all(
    Array.from(
      { length: 8 },
      () =>
        new Promise((resolve) => {
          const c = spawn('sh', ['-c', `for i in 1 2 3 4 5 6; do ${node} ${bin('mam-pick')} --agent-session s || break; done`], {
            cwd: ws.root,
            env: ws.env,
            stdio: ['ignore', 'pipe', 'ignore'],
          });
          let out = '';
          c.stdout.on('data', (d) => (out += d));
          c.on('exit', () =>
            resolve(
              claimed.push(
                ...out
                  .trim()
                  .split('\n')
                  .filter(Boolean)
                  .map((l) => JSON.parse(l).job_id),
              ),
            ),
          );
        }),
    ),
  );
  const pickSecs = (performance.now() - t) / 1000;
  results.contention = {
    publishers: { events: seqs.length, eventsPerSec: +(seqs.length / pubSecs).toFixed(1), seqsUniqueAndGapFree: seqs.every((s, i) => s === i + 1) },
    pickers: { picks: claimed.length, picksPerSec: +(claimed.length / pickSecs).toFixed(1), eachClaimedOnce: new Set(claimed).size === claimed.length },
  };
}

// 5. Heartbeat cost: one timer at a 1 s period, resident memory and CPU between beats.
{
  const ws = workspace(brokerEnv);
  const job = registerJob(ws);
  const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
  run(node, [bin('mam-publish'), '--job', job, '--event', 'started', '--heartbeat', '1', '--watch-pid', String(sleeper.pid)], ws);
  const pid = Number(readFileSync(path.join(ws.root, '.mam/jobs', `${job}.heartbeat.pid`), 'utf8'));
  const seconds = Number(process.env.BENCH_HEARTBEAT_SEC ?? 20);
  await new Promise((r) => setTimeout(r, 2000));
  const cpu0 = cpuMs(pid);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const cpu1 = cpuMs(pid);
  const mem = procStatus(pid);
  results.heartbeat = {
    periodSec: 1,
    windowSec: seconds,
    rssMiB: +(mem.rssKiB / 1024).toFixed(1),
    peakRssMiB: +(mem.hwmKiB / 1024).toFixed(1),
    cpuMsPerBeat: +((cpu1 - cpu0) / seconds).toFixed(1),
  };
  sleeper.kill('SIGKILL');
}

broker.stop();
rmSync(path.dirname(floorBundle), { recursive: true, force: true });
mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(path.join(ROOT, 'bench/results/latest.json'), `${JSON.stringify(results, null, 2)}\n`);
writeReadme(results);
console.log(JSON.stringify(results, null, 2));
process.exit(0);

function writeReadme(r) {
  const file = path.join(ROOT, 'bench/README.md');
  const base = r.publish['MQTT.js minimal script'].median;
  const paho = r.publish['Python paho-mqtt script']?.median;
  const rows = Object.entries(r.publish)
    .filter(([, v]) => typeof v === 'object' && v && 'median' in v)
    .map(
      ([k, v]) =>
        `| ${k} | ${v.median.toFixed(0)} | ${v.min.toFixed(0)} | ${v.max.toFixed(0)} | ${(v.median / base).toFixed(2)} | ${paho ? (v.median / paho).toFixed(2) : '-'} |`,
    );
  const s = r.scale;
  const m = r.monitor.large;
  const table = [
    `Measured ${r.at} on this machine (${r.machine.cpus} cores, Node ${r.machine.node}, NODE_EXTRA_CA_CERTS ${r.machine.extraCaCerts ? 'set here; contenders run without it unless their row says so' : 'unset'}), ${ROUNDS} alternated rounds.`,
    '',
    '### 1. Publish latency (connect, event + state QoS 1, disconnect), ms',
    '',
    '| contender | median | min | max | ÷ MQTT.js | ÷ paho |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `Peak RSS of mam-publish: ${r.publish.peakRssMiB.toFixed(1)} MiB.${r.publish.note ? ` ${r.publish.note}.` : ''}`,
    '',
    '### 2. Monitor throughput (signed events over 100 jobs)',
    '',
    '| events | mam-subscribe --all ev/s | mosquitto_sub ev/s | ratio | mam peak RSS MiB |',
    '|---|---|---|---|---|',
    ...[r.monitor.small, m].map(
      (x) =>
        `| ${x.events} | ${x['mam-subscribe --all'].eventsPerSec} | ${x.mosquitto_sub.eventsPerSec} | ${(x['mam-subscribe --all'].eventsPerSec / x.mosquitto_sub.eventsPerSec).toFixed(2)} | ${x['mam-subscribe --all'].peakRssMiB.toFixed(1)} |`,
    ),
    '',
    '### 3. Registry scale (median ms)',
    '',
    '| jobs | mam-pick | mam-publish |',
    '|---|---|---|',
    ...Object.entries(s).map(([k, v]) => `| ${k} | ${v.pick.median.toFixed(0)} | ${v.publish.median.toFixed(0)} |`),
    '',
    `Ratio 10,000 ÷ 10: pick ${(s[10000].pick.median / s[10].pick.median).toFixed(2)}, publish ${(s[10000].publish.median / s[10].publish.median).toFixed(2)}.`,
    '',
    '### 4. Contention',
    '',
    `8 publishers on one job: ${r.contention.publishers.eventsPerSec} events/s, seqs unique and gap-free: ${r.contention.publishers.seqsUniqueAndGapFree}. 8 pickers: ${r.contention.pickers.picksPerSec} picks/s, each job claimed once: ${r.contention.pickers.eachClaimedOnce}.`,
    '',
    '### 5. Heartbeat timer (1 s period)',
    '',
    `RSS ${r.heartbeat.rssMiB} MiB (peak ${r.heartbeat.peakRssMiB}), CPU ${r.heartbeat.cpuMsPerBeat} ms per beat over ${r.heartbeat.windowSec} s.`,
  ].join('\n');
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, text.replace(/<!-- results -->[\s\S]*<!-- \/results -->/, `<!-- results -->\n${table}\n<!-- /results -->`));
}
