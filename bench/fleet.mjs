// `node bench/fleet.mjs` (issue 17): a fleet of jobs with heartbeats, watched by one monitor
// (`mam-subscribe --all --alerts`) for minutes on one machine: CPU per event, memory flat, no false
// stalled/idle verdict, no lost event — first through a private mosquitto, then through the 3-node
// NATS cluster the tests start. The beats come from one load generator that sends the heartbeat
// timer's very messages (the package's own builders and signing), spread evenly over each period,
// plus a few real timers (`mam-publish --event started --heartbeat`) beside them. Baselines in the
// same run read the same stream: `mosquitto_sub`, a minimal MQTT.js subscriber, and the monitor
// without `--alerts`. See bench/README.md, "Fleet", for the knobs and what the numbers mean.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { connect, connectAsync } from 'mqtt';
import { ROOT, cpuMs, eachLine, loadClusterHarness, mqttJsOptions, procStatus, slope } from './lib.mjs';
import { snapshotBuild, spawnLines, spawned, startMosquitto, workspace, writeRecordWith } from './lib.mjs';

const JOBS = Number(process.env.BENCH_FLEET_JOBS ?? 500);
const BEAT = Number(process.env.BENCH_FLEET_BEAT ?? 5);
const SEC = Number(process.env.BENCH_FLEET_SEC ?? 300);
const MISSES = Number(process.env.BENCH_FLEET_MISSES ?? 4);
const REAL = Number(process.env.BENCH_FLEET_REAL ?? 20);
const TOUCH = process.env.BENCH_FLEET_TOUCH !== '0';
const BROKERS = (process.env.BENCH_FLEET_BROKERS ?? 'mosquitto,cluster').split(',');
const WINDOW = BEAT * MISSES;
const TOPIC_ROOT = 'python/mqtt/jobs'; // the cluster's observer may read only this tree
const PROBE = `${TOPIC_ROOT}/fleet-probe/ready/now`; // below `<root>/+/+`: no watcher of jobs sees it
const SAMPLE_MS = 10_000;
const node = process.execPath;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const r1 = (v) => +v.toFixed(1);
const r2 = (v) => +v.toFixed(2);

// ---- child: the load generator ---------------------------------------------------------------------
// One MQTT.js connection per job, as each timer keeps one; per beat what the timer's commit and send
// do: take the next seq, rewrite the record (last_seq, updated_at: the monitor re-reads a record whose
// file changed), then the signed `progress`/`heartbeat` event and its retained state, QoS 1, in parallel.
async function generator(cfg) {
  const api = await import(pathToFileURL(path.join(cfg.build, 'dist/lib/api/index.js')).href);
  const recs = cfg.jobs.map((id) => JSON.parse(readFileSync(path.join(cfg.registryDir, `${id}.json`), 'utf8')));
  const t0 = now();
  const clients = [];
  for (let i = 0; i < recs.length; i += 50) {
    const batch = recs.slice(i, i + 50).map((_, k) => {
      const c = connect(mqttJsOptions(cfg.targets[(i + k) % cfg.targets.length], 'hb'));
      c.on('error', () => undefined);
      return new Promise((resolve) => c.once('connect', () => resolve(c)));
    });
    clients.push(...(await Promise.all(batch)));
  }
  const acked = recs.map(() => 0);
  const s = { connectMs: Math.round(now() - t0), beats: 0, skipped: 0, failed: 0, inflight: 0, maxLagMs: 0, lateOver1s: 0 };
  const beat = (j) => {
    const rec = recs[j];
    if (!clients[j].connected) return void s.skipped++; // as the timer: a beat due while cut off is skipped
    const at = new Date();
    rec.last_seq++;
    rec.updated_at = at.toISOString();
    if (cfg.touch) {
      const file = path.join(cfg.registryDir, `${rec.job_id}.json`);
      writeFileSync(`${file}.fleet-tmp`, `${JSON.stringify(rec, null, 2)}\n`, { mode: 0o600 });
      renameSync(`${file}.fleet-tmp`, file);
    }
    const { job_id: jobId, dispatch_token: dispatchToken, attempt_id: attemptId } = rec;
    const common = { jobId, seq: rec.last_seq, detail: api.HEARTBEAT_DETAIL, dispatchToken, attemptId, now: at };
    const event = api.signPayload(api.buildEventPayload({ ...common, event: 'progress' }), rec.auth_token);
    const state = api.signPayload(api.buildStatePayload({ ...common, status: rec.status, lastEvent: 'progress' }), rec.auth_token);
    s.inflight++;
    const both = Promise.all([
      clients[j].publishAsync(api.eventsTopic(cfg.root, jobId), api.wireJson(event), { qos: 1, retain: false }),
      clients[j].publishAsync(api.stateTopic(cfg.root, jobId), api.wireJson(state), { qos: 1, retain: true }),
    ]);
    both
      .then(
        () => acked[j]++,
        () => s.failed++,
      )
      .finally(() => s.inflight--);
  };
  let timer;
  let stopping = false;
  const gapMs = (cfg.beatSec * 1000) / recs.length;
  let cpu0;
  const start = () => {
    cpu0 = process.cpuUsage();
    const t = now();
    const tick = () => {
      if (stopping) return;
      const due = now();
      for (; t + s.beats * gapMs <= due; s.beats++) {
        const lag = due - (t + s.beats * gapMs);
        s.maxLagMs = Math.max(s.maxLagMs, lag);
        if (lag > 1_000) s.lateOver1s++;
        beat(s.beats % recs.length);
      }
      timer = setTimeout(tick, Math.max(0, t + s.beats * gapMs - now()));
    };
    tick();
  };
  const stop = async () => {
    stopping = true;
    clearTimeout(timer);
    for (let i = 0; i < 200 && s.inflight > 0; i++) await sleep(50);
    const seqs = Object.fromEntries(recs.map((r, j) => [r.job_id, { seq: r.last_seq, acked: acked[j] }]));
    const { user, system } = process.cpuUsage(cpu0);
    process.stdout.write(`${JSON.stringify({ ...s, maxLagMs: r1(s.maxLagMs), cpuMs: Math.round((user + system) / 1000), seqs })}\n`);
    await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
    process.exit(0);
  };
  eachLine(process.stdin, (line) => (line === 'go' ? start() : line === 'stop' ? void stop() : undefined));
  process.stdout.write('READY\n');
}

// ---- child: the minimal MQTT.js subscriber (the Node floor) ----------------------------------------
async function rawSubscriber(cfg) {
  const c = await connectAsync(mqttJsOptions(cfg.target, 'raw'));
  c.on('message', (topic, payload) => process.stdout.write(`${topic} ${payload}\n`));
  await c.subscribeAsync([`${cfg.root}/+/+`, PROBE], { qos: 1 });
}

// ---- the bench ---------------------------------------------------------------------------------------

const hostPort = (hp) => ({ host: hp.split(':')[0], port: Number(hp.split(':')[1]) });

/** What one reader got: events by job (distinct seqs), states, and whether it saw the readiness probe. */
const tally = () => ({ events: 0, states: 0, seqs: new Map(), top: new Map(), late: [], probe: false });
/** An event; one below a seq already seen for its job came late (QoS 1 redelivered it, or order was lost): kept with when. */
function note(t, { job_id, seq }, at) {
  t.events++;
  if (!t.seqs.has(job_id)) t.seqs.set(job_id, new Set());
  t.seqs.get(job_id).add(seq);
  const [top, topAt] = t.top.get(job_id) ?? [0, at];
  if (seq > top) t.top.set(job_id, [seq, at]);
  else t.late.push({ job: job_id, seq, afterSeq: top, secAfterIt: r1((at - topAt) / 1000) });
}
/** `topic payload` lines (mosquitto_sub -v, the MQTT.js subscriber). */
const wireLine = (t) => (line, at) => {
  const topic = line.slice(0, line.indexOf(' '));
  if (topic === PROBE) t.probe = true;
  else if (topic.endsWith('/events')) note(t, JSON.parse(line.slice(topic.length + 1)), at);
  else if (topic.endsWith('/state')) t.states++;
};

/** One broker: fleet registry, generator, readers, real timers; SEC seconds of beats; then the counts. */
async function phase(kind, harness, build) {
  const { bin } = build;
  const cluster = kind === 'cluster' ? await harness.startNatsCluster() : undefined;
  const mosq = cluster ? undefined : await startMosquitto();
  const stopBroker = () => (cluster ? cluster.stop() : mosq.stop());
  spawned.add(stopBroker);
  const servers = (order) => (cluster ? cluster.servers(order) : `127.0.0.1:${mosq.port}`);
  const list = (order) => servers(order).split(',').map(hostPort);
  const creds = (who) => (cluster ? { username: cluster.users[who].username, password: cluster.users[who].password } : {});
  const auth = (who) => (cluster ? { MQTT_USERNAME: creds(who).username, MQTT_PASSWORD: creds(who).password } : {});
  const mqttEnv = (order, who) => ({ MQTT_SERVERS: servers(order), ...auth(who) });
  // Spread as a deployment would: the readers on node 1, the agents' connections on nodes 2 and 3.
  const readerOrder = [0, 1, 2];
  const agentOrders = cluster ? [1, 2].map((k) => [k, (k + 1) % 3, (k + 2) % 3]) : [[0]];
  const agentOrder = (i) => agentOrders[i % agentOrders.length];
  const ws = workspace({ MAM_LOG_LEVEL: 'warn', MAM_TOPIC_ROOT: TOPIC_ROOT });
  const created = new Date().toISOString();
  const limits = { heartbeat_sec: BEAT, heartbeat_misses: MISSES, idle_timeout_sec: WINDOW };
  const ids = Array.from({ length: JOBS }, (_, i) => (0x30000000 + i).toString(16));
  ids.forEach((id, i) => writeRecordWith(ws, id, 'running', created, { ...limits, agent_session: `fleet-${i}` }));
  const realIds = Array.from({ length: REAL }, (_, i) => (0x3f000000 + i).toString(16));
  realIds.forEach((id, i) => writeRecordWith(ws, id, 'pending', created, { ...limits, agent_session: `real-${i}` }));
  const registryDir = path.join(ws.root, '.mam/jobs');

  // The generator connects all its clients before any reader starts: no job is silent while it does.
  const targets = agentOrders.map((o) => ({ servers: list(o), ...creds('agent') }));
  const genCfg = { build: build.dir, jobs: ids, registryDir, beatSec: BEAT, touch: TOUCH, root: TOPIC_ROOT, targets };
  let genReady;
  const ready = new Promise((resolve) => (genReady = resolve));
  const gen = spawnLines(node, [path.join(ROOT, 'bench/fleet.mjs'), '--generator', JSON.stringify(genCfg)], process.env, (line) => {
    if (line === 'READY') genReady();
    else if (line.startsWith('{')) gen.summary = JSON.parse(line);
  });
  await Promise.race([ready, gen.exited]);
  if (gen.code !== undefined) throw new Error(`generator exited ${gen.code}: ${gen.err}`);

  // Readers. The monitor's lines: events (seqs, and each job's longest silence as printed), alerts, GC traces.
  const t = { monitor: tally(), monitorPlain: tally(), mosquittoSub: tally(), mqttJs: tally() };
  const m = { last: new Map(), maxGap: new Map(), alerts: [], garbled: 0, heap: [] };
  let goAt = 0;
  const onMonitorLine = (line, at) => {
    if (line.startsWith('[')) {
      const gc = /(Scavenge|Mark-Compact)[^\d]*[\d.]+ \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/.exec(line);
      if (gc && goAt) m.heap.push([(at - goAt) / 1000, Number(gc[2]), gc[1]]);
      return;
    }
    let p;
    try {
      p = JSON.parse(line);
    } catch {
      return void m.garbled++;
    }
    if (p.alert) return void m.alerts.push({ ...p, atSec: goAt ? r1((at - goAt) / 1000) : null });
    note(t.monitor, p, at);
    const prev = m.last.get(p.job_id) ?? (realIds.includes(p.job_id) ? at : goAt);
    m.maxGap.set(p.job_id, Math.max(m.maxGap.get(p.job_id) ?? 0, at - prev));
    m.last.set(p.job_id, at);
  };
  const monEnv = { ...ws.env, ...mqttEnv(readerOrder, 'observer'), MAM_LOG_LEVEL: process.env.BENCH_FLEET_MONITOR_LOG ?? 'warn' };
  const monArgs = [bin('mam-subscribe'), '--all', '--idle-timeout', String(WINDOW)];
  const r = {
    monitor: spawnLines(node, ['--trace-gc', ...monArgs, '--alerts'], monEnv, onMonitorLine, ws.root),
    // The same monitor without --alerts (the idle clock still judges): what the alerts' 1 s registry tick costs.
    monitorPlain: spawnLines(node, monArgs, monEnv, (l, at) => l.startsWith('{') && note(t.monitorPlain, JSON.parse(l), at), ws.root),
  };
  const [{ host, port }] = list(readerOrder);
  const u = creds('observer');
  const subArgs = [...`-h ${host} -p ${port} -q 1 -v -t ${TOPIC_ROOT}/+/+ -t ${PROBE}`.split(' '), ...(cluster ? ['-u', u.username, '-P', u.password] : [])];
  r.mosquittoSub = spawnLines('mosquitto_sub', subArgs, process.env, wireLine(t.mosquittoSub));
  const rawCfg = { root: TOPIC_ROOT, target: { servers: list(readerOrder), ...u } };
  r.mqttJs = spawnLines(node, [path.join(ROOT, 'bench/fleet.mjs'), '--raw-sub', JSON.stringify(rawCfg)], process.env, wireLine(t.mqttJs));
  // Ready: SUBSCRIBED from both monitors, and a probe (outside every job's topics) seen by both baselines.
  const probe = await connectAsync(mqttJsOptions(targets[0], 'probe'));
  const subscribed = (x) => x.err.includes('SUBSCRIBED');
  for (let i = 0; !(subscribed(r.monitor) && subscribed(r.monitorPlain) && t.mosquittoSub.probe && t.mqttJs.probe); i++) {
    if (i > 300) throw new Error(`readers not ready: ${r.monitor.err} ${r.monitorPlain.err} ${t.mosquittoSub.probe} ${t.mqttJs.probe}`);
    await probe.publishAsync(PROBE, 'ready', { qos: 1 });
    await sleep(100);
  }
  await probe.endAsync();

  // Real timers: `started --heartbeat BEAT` watching one sleeper; each ends with a real `completed`.
  const sleeper = spawn('sleep', ['100000'], { stdio: 'ignore' });
  spawned.add(() => sleeper.kill('SIGKILL'));
  const publishAll = async (args) => {
    const env = (i) => ({ ...ws.env, ...mqttEnv(agentOrder(i), 'agent') });
    const runs = realIds.map((id, i) => spawnLines(node, [bin('mam-publish'), '--job', id, ...args], env(i), () => {}, ws.root));
    const codes = await Promise.all(runs.map((x) => x.exited));
    codes.forEach((code, i) => code !== 0 && console.error(`mam-publish ${realIds[i]} ${args[1]}: exit ${code}: ${runs[i].err}`));
    return codes.filter((c) => c !== 0).length;
  };
  const startFailures = await publishAll(['--event', 'started', '--heartbeat', String(BEAT), '--watch-pid', String(sleeper.pid)]);

  // The run: CPU from /proc between go and the end of the drain; RSS and the load average every SAMPLE_MS.
  const pids = Object.fromEntries(Object.entries(r).map(([k, x]) => [k, x.p.pid]));
  const brokerPids = cluster ? cluster.nodes.map((n) => n.pid) : [mosq.pid];
  const cpuNow = () => ({
    ...Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)])),
    broker: brokerPids.reduce((a, p) => a + cpuMs(p), 0),
  });
  const samples = [];
  const rss = (pid) => r1(procStatus(pid).rssKiB / 1024);
  const sample = () => {
    const s = { t: r1((now() - goAt) / 1000), load1: os.loadavg()[0], ...Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, rss(pid)])) };
    samples.push({ ...s, generator: gen.code === undefined ? rss(gen.p.pid) : null });
  };
  const logFrom = (cluster?.nodes ?? []).map((n) => readFileSync(n.logPath, 'utf8').length);
  gen.p.stdin.write('go\n');
  goAt = now();
  const cpu0 = cpuNow();
  const load0 = os.loadavg();
  sample();
  const sampler = setInterval(sample, SAMPLE_MS);
  await Promise.race([sleep(SEC * 1000), r.monitor.exited]);
  const endFailures = await publishAll(['--event', 'completed', '--attempts', '6']);
  gen.p.stdin.write('stop\n');
  await gen.exited;
  const runSec = (now() - goAt) / 1000;
  const g = gen.summary;
  const realSeq = Object.fromEntries(realIds.map((id) => [id, JSON.parse(readFileSync(path.join(registryDir, `${id}.json`), 'utf8')).last_seq]));
  const sentOf = (id) => g.seqs[id]?.seq ?? realSeq[id];
  const all = [...ids, ...realIds];
  const missing = (x) => all.reduce((a, id) => a + Math.max(0, sentOf(id) - (x.seqs.get(id)?.size ?? 0)), 0);
  // Drain: until every reader has every event, or nothing moved for 5 s; never near the idle window,
  // so a job's silence after its last beat is not taken for a stall.
  const drainStart = now();
  for (let before = -1, still = now(); now() - drainStart < Math.max(3, WINDOW - BEAT - 3) * 1000 && now() - still < 5_000; await sleep(250)) {
    const left = Object.values(t).reduce((a, x) => a + missing(x), 0);
    if (left === 0) break;
    if (left !== before) (before = left), (still = now());
  }
  const drainSec = r1((now() - drainStart) / 1000);
  const cpu1 = cpuNow();
  clearInterval(sampler);
  sample();
  const load1 = os.loadavg();
  for (const x of Object.values(r)) x.p.kill('SIGTERM');
  await Promise.all(Object.values(r).map((x) => x.exited));
  sleeper.kill('SIGKILL');
  // The nodes' warnings during the run (slow consumers, JetStream timeouts…), read before stop() removes them.
  const warnings = (text) => text.split('\n').filter((l) => /\[(WRN|ERR)\]/.test(l));
  const brokerLog = (cluster?.nodes ?? []).flatMap((n, i) => warnings(readFileSync(n.logPath, 'utf8').slice(logFrom[i])));
  await stopBroker();
  spawned.delete(stopBroker);

  // Counts: the seqs each job took against what each reader printed or received.
  const audit = { rejected: 0, duplicate: 0, seq_gap: 0, ignored_after_terminal: 0, publish_failed: 0, refused: 0 };
  const logDir = path.join(ws.root, '.mam/logs');
  for (const id of existsSync(logDir) ? readdirSync(logDir) : []) {
    const f = path.join(logDir, id, 'events.ndjson');
    for (const line of existsSync(f) ? readFileSync(f, 'utf8').split('\n') : []) {
      const type = line && JSON.parse(line).type;
      if (type in audit) audit[type]++;
    }
  }
  // The first 10 seqs a reader never got: a job's last (late, not lost)? when was it due? who else missed it?
  const missedBy = (k) => {
    const out = [];
    for (const id of all)
      for (let seq = 1; seq <= sentOf(id) && out.length < 10; seq++) {
        if (t[k].seqs.get(id)?.has(seq)) continue;
        const dueSec = g.seqs[id] ? r1(((seq - 1) * JOBS + ids.indexOf(id)) * (BEAT / JOBS)) : null;
        out.push({ job: id, seq, last: seq === sentOf(id), dueSec, alsoMissedBy: Object.keys(t).filter((o) => o !== k && !t[o].seqs.get(id)?.has(seq)) });
      }
    return out;
  };
  const gaps = [...m.maxGap.values()].sort((a, b) => a - b);
  const cpu = Object.fromEntries(Object.keys(cpu0).map((k) => [k, cpu1[k] - cpu0[k]]));
  const sent = all.reduce((a, id) => a + sentOf(id), 0);
  const generatorSeqs = ids.reduce((a, id) => a + g.seqs[id].seq, 0);
  const perEvent = Object.fromEntries(Object.keys(t).map((k) => [k, +(cpu[k] / t[k].events).toFixed(3)]));
  // Memory, from the start of the 2nd minute (a fifth into shorter runs). RSS is a sawtooth (a full GC gives tens of
  // MiB back, then V8 grows its spaces again), which swings a least-squares slope either way: flat is judged on the
  // highest RSS of the 2nd minute against the highest of the last two, within 10 %; the slope is kept as information.
  const from = Math.min(60, SEC / 5);
  const peak = (k, a, b) => Math.max(...samples.filter((s) => s.t >= a && s.t < b).map((s) => s[k]));
  const mem = (k) => {
    const after = samples.filter((s) => s.t >= from);
    const [early, late] = [peak(k, from, 2 * from), peak(k, runSec - 2 * from, Number.POSITIVE_INFINITY)];
    const perMin = r2(slope(after.map((s) => [s.t / 60, s[k]])));
    return { start: samples[0][k], atFrom: after[0]?.[k], end: samples.at(-1)[k], slopeMiBPerMin: perMin, peaks: [early, late], flat: late / early < 1.1 };
  };
  // The live heap's proxy without touching the process: the lowest heap after any GC, in the 2nd minute and in the last one.
  const lowest = (a, b) => Math.min(...m.heap.filter(([x]) => x >= a && x < b).map(([, v]) => v));
  const heap = [lowest(from, from + 60), lowest(runSec - 60, Number.POSITIVE_INFINITY)];
  const ratio = (k) => r2(perEvent.monitor / perEvent[k]);
  const result = {
    broker: cluster ? '3-node NATS cluster (MQTT streams R3)' : 'mosquitto',
    seconds: r1(runSec),
    drainSec,
    generator: { ...g, seqs: undefined, cpuMsPerBeat: +(g.cpuMs / g.beats).toFixed(3) },
    sent: { total: sent, generator: generatorSeqs, generatorAcked: ids.reduce((a, id) => a + g.seqs[id].acked, 0), real: sent - generatorSeqs },
    realTimers: { jobs: REAL, startFailures, endFailures },
    received: Object.fromEntries(
      Object.entries(t).map(([k, x]) => {
        const twice = x.events - [...x.seqs.values()].reduce((a, s) => a + s.size, 0);
        return [k, { events: x.events, states: x.states, lost: missing(x), twice, missed: missedBy(k), lateCount: x.late.length, late: x.late.slice(0, 10) }];
      }),
    ),
    monitor: {
      stalled: m.alerts.filter((a) => a.alert === 'stalled').length,
      alerts: m.alerts.slice(0, 20),
      exit: r.monitor.code,
      exitPlain: r.monitorPlain.code,
      stderrTail: r.monitor.err.slice(-500),
      rejectedLogged: r.monitor.rejectedLogs + r.monitorPlain.rejectedLogs,
      garbledLines: m.garbled,
      maxSilenceSec: r1((gaps.at(-1) ?? 0) / 1000),
      p99SilenceSec: r1((gaps[Math.floor(gaps.length * 0.99)] ?? 0) / 1000),
      silencesOverWindow: gaps.filter((x) => x > WINDOW * 1000).length,
      windowSec: WINDOW,
    },
    audit,
    brokerWarnings: { count: brokerLog.length, first: brokerLog.slice(0, 10) },
    cpuMs: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, Math.round(v)])),
    cpuMsPerEvent: { ...perEvent, broker: +(cpu.broker / sent).toFixed(3) },
    ratios: { monitorOverMosquittoSub: ratio('mosquittoSub'), monitorOverMqttJs: ratio('mqttJs'), alertsOverPlain: ratio('monitorPlain') },
    memoryMiB: { fromSec: from, ...Object.fromEntries(Object.keys(t).map((k) => [k, mem(k)])) },
    monitorHeapMiB: { fullGcs: m.heap.filter(([, , kind]) => kind === 'Mark-Compact').length, lowestAfterGc: heap, flat: heap[1] / heap[0] < 1.1 },
    loadAverage: { start: load0.map(r2), end: load1.map(r2), max1: Math.max(...samples.map((s) => s.load1)) },
    samples,
  };
  await sleep(BEAT * 1000); // a real timer whose completed failed sees its sleeper gone; then the workspace goes
  rmSync(ws.root, { recursive: true, force: true });
  return result;
}

async function main() {
  const harness = BROKERS.includes('cluster') ? await loadClusterHarness() : undefined;
  // BENCH_FLEET_BUILD: another checkout's build (package.json, bin/, dist/) instead of this tree's.
  const build = await snapshotBuild(process.env.BENCH_FLEET_BUILD ?? ROOT);
  const knobs = { JOBS, BEAT, SEC, MISSES, REAL, TOUCH, BUILD: process.env.BENCH_FLEET_BUILD ?? null, subscribeBundle: build.sha };
  const results = { at: new Date().toISOString(), machine: { node: process.version, cpus: os.cpus().length }, knobs };
  for (const kind of BROKERS) {
    console.error(`fleet: ${kind}, ${JOBS} jobs + ${REAL} real timers, a beat every ${BEAT} s, ${SEC} s…`);
    results[kind] = await phase(kind, harness, build);
    const { samples, ...summary } = results[kind];
    console.log(JSON.stringify({ [kind]: summary }, null, 1));
  }
  mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(path.join(ROOT, 'bench/results/fleet.json'), `${JSON.stringify(results, null, 2)}\n`);
  for (const k of BROKERS) {
    const x = results[k];
    const mon = x.monitor;
    const falseVerdicts = mon.stalled + mon.silencesOverWindow + (mon.exit === 0 ? 0 : 1) + x.audit.rejected + mon.rejectedLogged;
    console.log(
      `${k}: ${falseVerdicts === 0 ? 'no false verdict' : 'FALSE VERDICT'}, monitor lost ${x.received.monitor.lost} of ${x.sent.total}, ` +
        `memory ${x.memoryMiB.monitor.flat && x.monitorHeapMiB.flat ? 'flat' : 'NOT flat'}, CPU/event ${x.cpuMsPerEvent.monitor} ms ` +
        `(${x.ratios.monitorOverMosquittoSub} × mosquitto_sub, ${x.ratios.monitorOverMqttJs} × MQTT.js)`,
    );
  }
  process.exit(0);
}

if (process.argv[2] === '--generator') await generator(JSON.parse(process.argv[3]));
else if (process.argv[2] === '--raw-sub') await rawSubscriber(JSON.parse(process.argv[3]));
else await main();
