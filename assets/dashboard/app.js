// MAM dashboard page: plain modern JS, no framework, nothing loaded from anywhere but this server.
// Data arrives as Server-Sent Events (/api/events): a snapshot on every (re)connection, then updates.
// Every string from the server goes into the page as text (textContent), never as HTML.

import { $, api } from './dom.js';
import { openJob, renderJob, addLiveEntry, renderTimeline } from './job-view.js';
import { renderCounts, renderList, tick } from './list.js';
import { PAGE_SIZE, defaultDir, readView, setView, state } from './state.js';

const SEARCH_DEBOUNCE_MS = 200;

window.addEventListener('popstate', () => {
  state.view = readView();
  syncFilterInputs();
  showView();
});

// ---- rendering -----------------------------------------------------------------------------------

function scheduleRender() {
  if (state.renderQueued) return;
  state.renderQueued = true;
  requestAnimationFrame(() => {
    state.renderQueued = false;
    render();
  });
}

function render() {
  renderConn();
  renderCounts(pickCount);
  if (state.view.job) renderJob();
  else renderList();
  document.body.dataset.ready = 'true';
}

function renderConn() {
  const el = $('#conn');
  const b = state.broker ?? {};
  let text;
  if (!state.source || state.source.readyState !== 1) text = 'reconnecting to the dashboard…';
  else if (b.state === 'live') text = `live · ${b.broker ?? 'broker'}`;
  else if (b.state === 'down') text = `broker unreachable${b.message ? `: ${b.message}` : ''} — showing the registry`;
  else text = 'connecting to the broker…';
  const st = !state.source || state.source.readyState !== 1 ? 'offline' : (b.state ?? 'connecting');
  if (el.textContent !== text) el.textContent = text;
  el.dataset.state = st;
  const notice = $('#notice');
  const msg = state.corrupt.length ? `${state.corrupt.length} record(s) cannot be read and are not shown: ${state.corrupt.join(', ')}` : '';
  notice.hidden = !msg;
  if (notice.textContent !== msg) notice.textContent = msg;
}

function connect() {
  state.source?.close();
  const es = new EventSource('/api/events');
  state.source = es;
  es.addEventListener('open', scheduleRender);
  es.addEventListener('snapshot', (ev) => {
    const s = JSON.parse(ev.data);
    state.skew = s.now - Date.now();
    state.actions = s.actions;
    state.actionsEnabled = s.actions_enabled && s.auth_required;
    state.authRequired = s.auth_required;
    state.broker = s.broker;
    state.counts = s.counts;
    state.corrupt = s.corrupt ?? [];
    state.jobs = new Map(s.jobs.map((r) => [r.job_id, r]));
    $('#logout').hidden = !s.auth_required;
    if (state.view.job) openJob(state.view.job);
    scheduleRender();
  });
  es.addEventListener('update', (ev) => {
    const u = JSON.parse(ev.data);
    state.skew = u.now - Date.now();
    state.counts = u.counts;
    if (u.broker) state.broker = u.broker;
    if (u.corrupt) state.corrupt = u.corrupt;
    for (const r of u.rows) state.jobs.set(r.job_id, r);
    for (const id of u.removed) state.jobs.delete(id);
    const open = state.view.job;
    if (open) {
      if (u.dropped > 0) openJob(open);
      else for (const { job_id, entry } of u.entries) if (job_id === open) addLiveEntry(entry);
      // A status the timeline does not explain yet (a close, a pick): read it again.
      if (u.rows.some((r) => r.job_id === open && state.detail?.job && r.status !== state.detail.job.status)) openJob(open);
    }
    scheduleRender();
  });
  es.addEventListener('error', async () => {
    scheduleRender();
    if (es.readyState !== EventSource.CLOSED) return;
    // Closed for good: the server refused the stream (a session that expired) or is gone.
    const s = await api('/api/session').then((r) => r.json()).catch(() => null);
    if (s && s.auth_required && !s.authenticated) showLogin();
    else setTimeout(connect, 2000);
  });
}

// ---- views ---------------------------------------------------------------------------------------

function showView() {
  const jobView = Boolean(state.view.job);
  $('#list').hidden = jobView;
  $('#job').hidden = !jobView;
  document.title = jobView ? `Job ${state.view.job} · MAM` : 'MAM dashboard';
  if (jobView && state.detail?.job?.job_id !== state.view.job) {
    state.detail = null;
    openJob(state.view.job);
  }
  scheduleRender();
}

/** The filter fields as typed (the view may lag behind them by the search debounce). */
function formFilters() {
  return { status: $('#f-status').value, session: $('#f-session').value, agent: $('#f-agent').value, q: $('#f-q').value };
}

function pickCount(key) {
  // What is typed but not applied yet (the search debounce) is taken along, not wiped by the resync.
  setView({ ...formFilters(), status: state.view.status === key ? '' : key, job: '' }, Boolean(state.view.job));
  syncFilterInputs();
  showView();
}

function syncFilterInputs() {
  $('#f-status').value = state.view.status;
  $('#f-session').value = state.view.session;
  $('#f-agent').value = state.view.agent;
  $('#f-q').value = state.view.q;
}

function showLogin() {
  state.source?.close();
  state.source = null;
  $('#app').hidden = true;
  $('#login').hidden = false;
  $('#logout').hidden = true;
  $('#conn').textContent = 'logged out';
  $('#token').focus();
}

function start() {
  $('#login').hidden = true;
  $('#app').hidden = false;
  syncFilterInputs();
  showView();
  connect();
}

function wire() {
  let debounce;
  $('#filters').addEventListener('input', (ev) => {
    const t = ev.target;
    clearTimeout(debounce);
    // Every field is read, not only the one typed in: a second field typed into within the debounce
    // cancels the first one's timer, and its value must not be lost.
    const apply = () => {
      state.limit = PAGE_SIZE;
      setView(formFilters());
      scheduleRender();
    };
    if (t.type === 'search' || t.tagName === 'INPUT') debounce = setTimeout(apply, SEARCH_DEBOUNCE_MS);
    else apply();
  });
  $('#filters').addEventListener('submit', (ev) => ev.preventDefault());
  $('#filters').addEventListener('reset', () => {
    setTimeout(() => {
      setView({ status: '', session: '', agent: '', q: '' });
      syncFilterInputs();
      scheduleRender();
    });
  });
  for (const th of document.querySelectorAll('#jobs th[data-sort]')) {
    th.querySelector('button').addEventListener('click', () => {
      const sort = th.dataset.sort;
      const dir = state.view.sort === sort ? (state.view.dir === 'asc' ? 'desc' : 'asc') : defaultDir(sort);
      setView({ sort, dir });
      scheduleRender();
    });
  }
  $('#jobs tbody').addEventListener('click', (ev) => {
    const a = ev.target.closest('a.job-link');
    if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
    ev.preventDefault();
    setView({ job: a.dataset.job }, true);
    showView();
  });
  $('#back').addEventListener('click', (ev) => {
    ev.preventDefault();
    setView({ job: '' }, true);
    showView();
    const link = document.querySelector(`#jobs a[data-job="${CSS.escape(state.detail?.job?.job_id ?? '')}"]`);
    requestAnimationFrame(() => link?.focus());
  });
  $('#home').addEventListener('click', (ev) => {
    ev.preventDefault();
    setView({ job: '', status: '', session: '', agent: '', q: '' }, true);
    syncFilterInputs();
    showView();
  });
  $('#more').addEventListener('click', () => {
    state.limit += PAGE_SIZE;
    scheduleRender();
  });
  $('#every-beat').addEventListener('change', () => state.detail?.timeline && renderTimeline(state.detail.timeline));
  $('#login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = $('#token');
    const token = input.value;
    input.value = '';
    const res = await api('/api/login', { method: 'POST', body: JSON.stringify({ token }) });
    if (res.ok) {
      $('#login-error').textContent = '';
      start();
    } else {
      const body = await res.json().catch(() => ({}));
      $('#login-error').textContent = body.error ?? `refused (${res.status})`;
      input.focus();
    }
  });
  $('#logout').addEventListener('click', async () => {
    await api('/api/logout', { method: 'POST', body: '{}' });
    showLogin();
  });
  setInterval(tick, 1000);
}

async function main() {
  wire();
  const s = await api('/api/session')
    .then((r) => r.json())
    .catch(() => null);
  if (s && s.auth_required && !s.authenticated) showLogin();
  else start();
}

main();
