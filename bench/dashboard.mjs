// `node bench/dashboard.mjs`: `mam dashboard` with 1,000 running jobs and 50 signed events a second
// (issue 15), against `mam-subscribe --all` (the monitor it is built on) watching the same stream in
// the same run. Measures, for each: event → reader latency (the dashboard's reader is an SSE client,
// as a page is; the monitor's is its stdout), CPU per event, and resident memory sampled over the
// run (flat or not); and, when Debian's chromium is there, event → DOM latency and the first render
// of 1,000 rows in a real page. A raw MQTT.js subscriber gives the wire's own latency as the floor.
//
// BENCH_DASHBOARD_SEC (default 60) is the load's length; the memory check is a 600 s run.
// BENCH_RATE (default 50) events/s, BENCH_JOBS (default 1000), BENCH_WARMUP_PER_JOB (default 50:
// every job's live timeline full before the measured run). Results: bench/results/dashboard.json.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { connectAsync } from 'mqtt';
import { ROOT, bin, cpuMs, procStatus, signedEvent, startMosquitto, stats, workspace, writeRecord } from './lib.mjs';

const SECONDS = Number(process.env.BENCH_DASHBOARD_SEC ?? 60);
const RATE = Number(process.env.BENCH_RATE ?? 50);
const JOBS = Number(process.env.BENCH_JOBS ?? 1000);
const WARMUP_PER_JOB = Number(process.env.BENCH_WARMUP_PER_JOB ?? 50);
const SAMPLE_MS = 5_000;
const CHROMIUM = '/usr/bin/chromium';
const node = process.execPath;
const now = () => performance.timeOrigin + performance.now();
const ms = (v) => +v.toFixed(1);

const broker = await startMosquitto();
const ws = workspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port), MAM_LOG_LEVEL: 'warn' });
const created = new Date().toISOString();
const recs = Array.from({ length: JOBS }, (_, i) => writeRecord(ws, (0x20000000 + i).toString(16), 'running', created));

/** Publish times by `job:seq`, and each reader's latencies. */
const published = new Map();
const monitorSeen = new Set();
const latency = { wire: [], monitor: [], dashboard: [], browserStream: [], browser: [] };
const seen = (reader, jobId, seq, at = now()) => {
  const t = published.get(`${jobId}:${seq}`);
  if (t !== undefined) latency[reader].push(at - t);
};

/**
 * The live heap after each full GC (`--trace-gc`'s Mark-Compact lines), by time: RSS alone moves with
 * when V8 chooses to collect and to give memory back, the heap after a full collection does not.
 */
const heapAfterGc = { dashboard: [], monitor: [] };
let loadStart = null;
let loadStartWall = 0;
function traceGc(who, text) {
  for (const m of text.matchAll(/Mark-Compact[^\d]*[\d.]+ \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/g)) {
    if (loadStart !== null) heapAfterGc[who].push([(now() - loadStart) / 1000, Number(m[1])]);
  }
}

// ---- readers -------------------------------------------------------------------------------------

function startDashboard() {
  const child = spawn(node, ['--trace-gc', bin('mam'), 'dashboard', '--port', '0'], { cwd: ws.root, env: ws.env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.setEncoding('utf8').on('data', (d) => traceGc('dashboard', d));
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      const m = /mam dashboard on (http:\/\/\S+)/.exec(err);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`mam dashboard exited ${code}: ${err}`)));
  });
}

function startMonitor() {
  const child = spawn(node, ['--trace-gc', bin('mam-subscribe'), '--all'], { cwd: ws.root, env: ws.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let buf = '';
  child.stdout.setEncoding('utf8').on('data', (d) => {
    const at = now();
    traceGc('monitor', d);
    buf += d;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const p = JSON.parse(line);
        if (p.event === 'progress') {
          monitorSeen.add(`${p.job_id}:${p.seq}`);
          seen('monitor', p.job_id, p.seq, at);
        }
      } catch {}
      nl = buf.indexOf('\n');
    }
  });
  const ready = new Promise((resolve) => child.stderr.on('data', (d) => d.toString().includes('SUBSCRIBED') && resolve()));
  return { child, ready };
}

/** What a page does: one EventSource stream; a row's `last_seq` says which events reached it. */
async function readStream(url, signal) {
  const res = await fetch(`${url}/api/events`, { signal });
  const lastSeq = new Map();
  let snapshotRows = 0;
  const live = new Promise((resolve) => {
    void (async () => {
      const decoder = new TextDecoder();
      let buf = '';
      try {
        for await (const chunk of res.body) {
          const at = now();
          buf += decoder.decode(chunk, { stream: true });
          let end = buf.indexOf('\n\n');
          while (end >= 0) {
            const frame = buf.slice(0, end);
            buf = buf.slice(end + 2);
            const event = /^event: (.*)$/m.exec(frame)?.[1];
            const data = /^data: (.*)$/m.exec(frame)?.[1];
            if (event === 'snapshot') snapshotRows = JSON.parse(data).jobs.length;
            if (event === 'update' || event === 'snapshot') {
              const d = JSON.parse(data);
              if (d.broker?.state === 'live') resolve();
              for (const r of d.rows ?? d.jobs) {
                for (let s = (lastSeq.get(r.job_id) ?? 0) + 1; s <= r.last_seq; s++) seen('dashboard', r.job_id, s, at);
                lastSeq.set(r.job_id, Math.max(lastSeq.get(r.job_id) ?? 0, r.last_seq));
              }
            }
            end = buf.indexOf('\n\n');
          }
        }
      } catch {
        // aborted at the end
      }
    })();
  });
  return { live, rows: () => snapshotRows, lastSeq: (id) => lastSeq.get(id) ?? 0 };
}

/** Chromium, when installed: the first render of every row, then each row's change seen in the DOM. */
async function openBrowser(url) {
  if (!existsSync(CHROMIUM)) return undefined;
  const { chromium } = await import('playwright-core');
  const args = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ];
  const browser = await chromium.launch({ executablePath: CHROMIUM, args });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const t0 = Date.now();
  // Most recent beat first: the rows that change are the ones on screen.
  await page.goto(`${url}/?sort=last_beat_at`);
  await page.locator('body[data-ready]').waitFor();
  await page.waitForFunction((n) => globalThis.document.querySelector('#summary')?.textContent === `${n} jobs`, JOBS);
  const firstRenderMs = Date.now() - t0;
  await page.evaluate(() => {
    const doc = globalThis.document;
    globalThis.__marks = [];
    new globalThis.MutationObserver((records) => {
      const at = Date.now();
      const mark = (tr) => {
        const m = tr && /#(\d+) progress/.exec(tr.children[4]?.textContent ?? '');
        if (m) globalThis.__marks.push([tr.dataset.id, Number(m[1]), at]);
      };
      for (const r of records) {
        // A row filled in place (its cells replaced), or a row (re)inserted into the list.
        mark(r.target.closest?.('tr[data-id]'));
        for (const n of r.addedNodes) if (n.matches?.('tr[data-id]')) mark(n);
      }
    }).observe(doc.querySelector('#jobs tbody'), { childList: true, subtree: true });
    // Main-thread work over 50 ms (style, layout, script): what would make the page feel stuck.
    globalThis.__longTasks = [];
    new globalThis.PerformanceObserver((list) => {
      for (const e of list.getEntries()) globalThis.__longTasks.push([Date.now(), e.duration]);
    }).observe({ type: 'longtask' });
    // A second stream in the same page: when an update reached the browser, before any render.
    globalThis.__arrivals = [];
    new globalThis.EventSource('/api/events').addEventListener('update', (ev) => {
      const at = Date.now();
      for (const r of JSON.parse(ev.data).rows) globalThis.__arrivals.push([r.job_id, r.last_seq, at]);
    });
  });
  return {
    firstRenderMs,
    async collect() {
      const marks = await page.evaluate(() => globalThis.__marks);
      const best = new Map();
      for (const [id, seq, at] of marks) if (!best.has(`${id}:${seq}`)) best.set(`${id}:${seq}`, at);
      // The page shows a row's last seq: the seqs before it reached the page no later than it did.
      for (const [key, at] of best) seen('browser', ...key.split(':').map((x, i) => (i ? Number(x) : x)), at);
      // First arrival only: a row is sent again when only its health changes (stalled), its seq not.
      const arrived = new Map();
      for (const [id, seq, at] of await page.evaluate(() => globalThis.__arrivals))
        if (!arrived.has(`${id}:${seq}`)) arrived.set(`${id}:${seq}`, [id, seq, at]);
      for (const [id, seq, at] of arrived.values()) seen('browserStream', id, seq, at);
      const long = await page.evaluate(() => globalThis.__longTasks);
      // Main-thread time in long tasks, per second of load, in the first and the last quarter: does the page slow down?
      const quarterMs = (q) => {
        const from = loadStartWall + (q * SECONDS * 1000) / 4;
        const xs = long.filter(([at]) => at >= from && at < from + (SECONDS * 1000) / 4);
        return ms(xs.reduce((a, [, d]) => a + d, 0) / (SECONDS / 4));
      };
      return {
        domMutationsSeen: marks.length,
        longTasks: long.length,
        longTaskMsPerSec: { firstQuarter: quarterMs(0), lastQuarter: quarterMs(3) },
        longestTaskMs: ms(Math.max(0, ...long.map(([, d]) => d))),
      };
    },
    close: () => browser.close(),
  };
}

// ---- the run -------------------------------------------------------------------------------------

const dash = await startDashboard();
const monitor = startMonitor();
const wire = await connectAsync({ host: '127.0.0.1', port: broker.port, protocolVersion: 4 });
wire.on('message', (_topic, payload) => {
  const p = JSON.parse(payload.toString());
  seen('wire', p.job_id, p.seq);
});
await wire.subscribeAsync('python/mqtt/jobs/+/events', { qos: 1 });
const abort = new AbortController();
const stream = await readStream(dash.url, abort.signal);
await Promise.all([stream.live, monitor.ready]);

const pub = await connectAsync({ host: '127.0.0.1', port: broker.port, protocolVersion: 4 });
const seqs = new Map();
const nextEvent = (rec) => {
  const seq = (seqs.get(rec.job_id) ?? 0) + 1;
  seqs.set(rec.job_id, seq);
  return seq;
};
// Warm-up: every job gets WARMUP_PER_JOB events first, so that the board's per-job timelines (50
// entries at most) are full before the measured run: what is measured then is the steady state.
if (WARMUP_PER_JOB > 0) {
  for (let round = 0; round < WARMUP_PER_JOB; round++) {
    await Promise.all(recs.map((rec) => pub.publishAsync(`python/mqtt/jobs/${rec.job_id}/events`, signedEvent(rec, nextEvent(rec)), { qos: 1 })));
  }
  const until = Date.now() + 120_000;
  // Nothing of it is timed; both readers must have every warm-up event before the run starts.
  while (Date.now() < until) {
    const done = [...seqs].every(([id, seq]) => stream.lastSeq(id) >= seq) && monitorSeen.size >= JOBS * WARMUP_PER_JOB;
    if (done) break;
    await new Promise((r) => setTimeout(r, 100));
  }
}
const page = await openBrowser(dash.url);
const samples = [];
const cpu0 = { dashboard: cpuMs(dash.child.pid), monitor: cpuMs(monitor.child.pid) };
const sample = () => {
  const d = procStatus(dash.child.pid);
  const m = procStatus(monitor.child.pid);
  samples.push({ t: samples.length * (SAMPLE_MS / 1000), dashboardMiB: +(d.rssKiB / 1024).toFixed(1), monitorMiB: +(m.rssKiB / 1024).toFixed(1) });
};
sample();
const sampler = setInterval(sample, SAMPLE_MS);
const total = SECONDS * RATE;
const start = now();
loadStart = start;
loadStartWall = Date.now();
for (let i = 0; i < total; i++) {
  // Evenly spread, random jobs: each job's seqs in order, as one agent would send them.
  const wait = start + (i * 1000) / RATE - now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const rec = recs[Math.floor(Math.random() * JOBS)];
  const seq = nextEvent(rec);
  published.set(`${rec.job_id}:${seq}`, now());
  void pub.publishAsync(`python/mqtt/jobs/${rec.job_id}/events`, signedEvent(rec, seq), { qos: 1 });
}
const deadline = Date.now() + 10_000;
while ((latency.dashboard.length < total || latency.monitor.length < total) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
clearInterval(sampler);
sample();
const cpu = { dashboard: cpuMs(dash.child.pid) - cpu0.dashboard, monitor: cpuMs(monitor.child.pid) - cpu0.monitor };
const pageStats = page ? await page.collect() : undefined;

await page?.close();
abort.abort();
await Promise.all([pub.endAsync(), wire.endAsync()]);
dash.child.kill('SIGTERM');
monitor.child.kill('SIGTERM');
broker.stop();

// ---- report --------------------------------------------------------------------------------------

const lat = (xs) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, median: ms(stats(s).median), p95: ms(s[Math.floor(s.length * 0.95)]), max: ms(s.at(-1)) };
};
// Flat or not: the mean of the last quarter of the samples against the mean of the second quarter
// (the first quarter is warm-up: the board, the JIT and V8's heap reach their working size).
const quarter = (k, q) => {
  const xs = samples.slice(Math.floor((samples.length * q) / 4), Math.floor((samples.length * (q + 1)) / 4)).map((s) => s[k]);
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
};
/** The heap after full GCs: the first ones after the first quarter (warm-up) against the last ones. */
function gcSummary(points) {
  const after = points.filter(([t]) => t >= SECONDS / 4);
  if (after.length < 2) return { fullGcs: points.length, note: 'too few full GCs in this run to compare' };
  const avg = (xs) => ms(xs.reduce((a, [, v]) => a + v, 0) / xs.length);
  const k = Math.max(1, Math.floor(after.length / 4));
  return { fullGcs: points.length, early: avg(after.slice(0, k)), late: avg(after.slice(-k)), max: ms(Math.max(...after.map(([, v]) => v))) };
}
const results = {
  at: new Date().toISOString(),
  machine: { node: process.version, cpus: (await import('node:os')).cpus().length },
  jobs: JOBS,
  rate: RATE,
  seconds: SECONDS,
  events: total,
  snapshotRows: stream.rows(),
  latencyMs: {
    wire: lat(latency.wire),
    monitor: lat(latency.monitor),
    dashboard: lat(latency.dashboard),
    browserStream: lat(latency.browserStream),
    browser: lat(latency.browser),
  },
  cpuMsPerEvent: { dashboard: ms(cpu.dashboard / total), monitor: ms(cpu.monitor / total) },
  rssMiB: {
    dashboard: {
      start: samples[0].dashboardMiB,
      secondQuarter: ms(quarter('dashboardMiB', 1)),
      lastQuarter: ms(quarter('dashboardMiB', 3)),
      end: samples.at(-1).dashboardMiB,
    },
    monitor: {
      start: samples[0].monitorMiB,
      secondQuarter: ms(quarter('monitorMiB', 1)),
      lastQuarter: ms(quarter('monitorMiB', 3)),
      end: samples.at(-1).monitorMiB,
    },
  },
  heapAfterFullGcMiB: { dashboard: gcSummary(heapAfterGc.dashboard), monitor: gcSummary(heapAfterGc.monitor) },
  browser: page ? { firstRenderMs: page.firstRenderMs, ...pageStats } : 'chromium not installed: skipped',
  samples,
  heapAfterGc,
};
mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(path.join(ROOT, 'bench/results/dashboard.json'), `${JSON.stringify(results, null, 2)}\n`);
const { samples: _s, heapAfterGc: _h, ...summary } = results;
console.log(JSON.stringify(summary, null, 2));
const L = results.latencyMs;
console.log(
  `\ndashboard ÷ monitor: latency median ${(L.dashboard.median / L.monitor.median).toFixed(1)}×, CPU per event ${(results.cpuMsPerEvent.dashboard / results.cpuMsPerEvent.monitor).toFixed(2)}×, RSS ${(results.rssMiB.dashboard.end / results.rssMiB.monitor.end).toFixed(2)}×; dashboard RSS last quarter ÷ second quarter ${(results.rssMiB.dashboard.lastQuarter / results.rssMiB.dashboard.secondQuarter).toFixed(3)}; heap after full GC late ÷ early: dashboard ${(results.heapAfterFullGcMiB.dashboard.late / results.heapAfterFullGcMiB.dashboard.early).toFixed(3)}, monitor ${(results.heapAfterFullGcMiB.monitor.late / results.heapAfterFullGcMiB.monitor.early).toFixed(3)}`,
);
process.exit(0);
