// One job: its state, command lines, timeline and record; and the actions (only with --allow-actions and a logged-in page).
import { $, api, ago, clock, h, span, statusBadge } from './dom.js';
import { state } from './state.js';

export async function openJob(jobId) {
  const res = await api(`/api/jobs/${jobId}`);
  if (state.view.job !== jobId) return;
  if (res.status === 404) {
    state.detail = { missing: jobId };
  } else if (res.ok) {
    const detail = await res.json();
    state.skew = detail.now - Date.now();
    state.detail = detail;
  } else return;
  renderJob(true);
}

export function renderJob(focus = false) {
  const d = state.detail;
  const id = state.view.job;
  const title = $('#job-title');
  if (!d || (d.job?.job_id !== id && d.missing !== id)) {
    title.textContent = `Job ${id}`;
    $('#job-state').textContent = 'loading…';
    return;
  }
  if (d.missing) {
    title.textContent = `Job ${id}`;
    $('#job-state').textContent = 'No such job in this registry.';
    for (const sel of ['#cli', '#timeline tbody', '#record', '#job-actions']) $(sel).replaceChildren();
    return;
  }
  const row = state.jobs.get(id) ?? d.job;
  title.textContent = `Job ${id}`;
  $('#job-state').replaceChildren(
    statusBadge(row),
    ` attempt ${row.attempt_id} · seq ${row.last_seq} · last beat `,
    h('span', { 'data-ago': row.last_beat_at ?? '', text: ago(row.last_beat_at) }),
    row.agent_session ? ` · session ${row.agent_session}` : '',
    row.agent ? ` · agent ${row.agent}` : '',
  );
  const actionKey = JSON.stringify([row.actions, state.actionsEnabled]);
  const box = $('#job-actions');
  if (box.dataset.key !== actionKey) {
    box.dataset.key = actionKey;
    box.replaceChildren(actionButtons(row, false));
  }
  renderCli(d.cli);
  renderTimeline(d.timeline);
  renderRecord(d.record);
  if (focus) title.focus();
}

export function renderCli(lines) {
  const ul = $('#cli');
  const key = JSON.stringify(lines);
  if (ul.dataset.key === key) return;
  ul.dataset.key = key;
  ul.replaceChildren(
    ...lines.map((l) => {
      const code = h('code', { text: l.line });
      return h('li', {}, h('span', { class: 'cli-label', text: l.label }), h('span', { class: 'cli-line' }, code, h('button', { type: 'button', class: 'quiet copy', onclick: (e) => copy(l.line, code, e.currentTarget) }, 'Copy')));
    }),
  );
}

export async function copy(text, code, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Plain http on another host is no secure context: select the line so that Ctrl+C takes it.
    const range = document.createRange();
    range.selectNodeContents(code);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
  }
  button.textContent = 'Copied';
  setTimeout(() => (button.textContent = 'Copy'), 1500);
}

export const entryKey = (e) => (e.kind === 'event' ? `e:${e.attempt}:${e.seq}` : `${e.kind}:${e.seq}:${e.at}`);

/** Folds runs of heartbeats into one line, unless every beat is asked for; gaps stay visible. */
export function displayEntries(entries, everyBeat) {
  const out = [];
  for (const e of entries) {
    const beat = e.kind === 'event' && e.event === 'progress' && e.detail === 'heartbeat';
    const last = out[out.length - 1];
    if (!everyBeat && beat && last?._beat && !e.gap && last.attempt === e.attempt) {
      last.count = (last.count ?? 1) + (e.count ?? 1);
      last.seq_to = e.seq_to ?? e.seq;
      last.at = e.at;
      continue;
    }
    out.push({ ...e, _beat: beat });
  }
  return out;
}

export function renderTimeline(timeline) {
  const tbody = $('#timeline tbody');
  const everyBeat = $('#every-beat').checked;
  const entries = displayEntries(timeline.entries, everyBeat);
  const key = `${everyBeat}:${entries.length}:${entries.length ? entryKey(entries[entries.length - 1]) + entries[entries.length - 1].at : ''}`;
  if (tbody.dataset.key === key) return;
  tbody.dataset.key = key;
  let prev = null;
  const trs = [];
  for (const e of entries) {
    if (e.gap) trs.push(h('tr', { class: 'gap' }, h('td', { colspan: 5, text: `⋯ ${e.gap} seq${e.gap > 1 ? 's' : ''} never seen before #${e.seq}` })));
    const seq = e.seq === null ? '' : e.seq_to && e.seq_to !== e.seq ? `${e.seq}–${e.seq_to}` : String(e.seq);
    const what = e.kind === 'event' ? (e._beat ? `heartbeat${e.count > 1 ? ` ×${e.count}` : ''}` : e.event) : e.kind === 'rejected' ? `rejected: ${e.event}` : e.event ?? e.kind;
    trs.push(
      h(
        'tr',
        { class: `k-${e.kind}${e._beat ? ' beat' : ''}${e.kind === 'event' ? ` ev-${e.event}` : ''}` },
        h('td', { 'data-label': 'Seq', text: seq }),
        h('td', { 'data-label': 'Event' }, e.kind === 'rejected' ? h('strong', { text: `⚠ ${what}` }) : what),
        h('td', { 'data-label': 'Detail', class: 'detail', text: e._beat ? '' : e.detail }),
        h('td', { 'data-label': 'Time' }, h('time', { datetime: new Date(e.at).toISOString(), title: new Date(e.at).toISOString(), text: clock(e.at) })),
        h('td', { 'data-label': 'Since previous', text: prev === null ? '' : span(e.at - prev) }),
      ),
    );
    prev = e.at;
  }
  tbody.replaceChildren(...trs);
  $('#timeline-note').textContent = timeline.truncated ? '(older entries are in the audit log)' : '';
}

export function renderRecord(record) {
  const dl = $('#record');
  const key = JSON.stringify(record);
  if (dl.dataset.key === key) return;
  dl.dataset.key = key;
  const items = [];
  for (const [k, v] of Object.entries(record ?? {})) {
    const text = v === null ? 'null' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    items.push(h('dt', { text: k }), h('dd', {}, k === 'brief' ? h('pre', { text }) : text));
  }
  dl.replaceChildren(...items);
}

/** A live entry for the open job: appended, or replacing the folded heartbeat it extends. */
export function addLiveEntry(entry) {
  const d = state.detail;
  if (!d?.timeline) return;
  const list = d.timeline.entries;
  const key = entryKey(entry);
  const at = list.findIndex((e) => entryKey(e) === key);
  if (at >= 0) {
    if (entry.kind === 'event' && entry.seq_to) list[at] = { ...list[at], ...entry, at: Math.max(list[at].at, entry.at) };
    return;
  }
  if (entry.kind === 'event' && list.some((e) => e.kind === 'event' && e.attempt === entry.attempt && entry.seq >= e.seq && entry.seq <= (e.seq_to ?? e.seq))) return;
  const prev = [...list].reverse().find((e) => e.kind === 'event' && e.attempt === entry.attempt);
  if (entry.kind === 'event' && prev && entry.seq > (prev.seq_to ?? prev.seq) + 1) entry = { ...entry, gap: entry.seq - (prev.seq_to ?? prev.seq) - 1 };
  list.push(entry);
  if (list.length > 400) list.splice(0, list.length - 400);
}

export function actionButtons(row, compact) {
  const wrap = h('span', { class: 'actions' });
  if (!state.actionsEnabled) return wrap;
  for (const a of state.actions) {
    if (!row.actions.includes(a.name)) continue;
    const button = h('button', { type: 'button', class: compact ? 'small' : '', 'data-action': a.name, text: a.label });
    button.addEventListener('click', () => armAction(button, row.job_id, a));
    wrap.append(button, ' ');
  }
  return wrap;
}

/** Two clicks: the first asks, the second does. No modal dialog, so it works with a keyboard and on a phone. */
export function armAction(button, jobId, action) {
  if (button.dataset.armed !== 'true') {
    button.dataset.armed = 'true';
    button.textContent = `Confirm: ${action.label.toLowerCase()} ${jobId}`;
    button.classList.add('armed');
    setTimeout(() => {
      if (!button.isConnected) return;
      button.dataset.armed = 'false';
      button.textContent = action.label;
      button.classList.remove('armed');
    }, 5000);
    return;
  }
  button.disabled = true;
  runAction(jobId, action).finally(() => {
    button.disabled = false;
  });
}

export async function runAction(jobId, action) {
  const out = $('#action-result');
  const res = await api(`/api/jobs/${jobId}/actions/${action.name}`, { method: 'POST', body: '{}' });
  const body = await res.json().catch(() => ({}));
  const text = res.ok ? `${body.message}${body.warning ? ` (warning: ${body.warning})` : ''}` : `${action.label} refused: ${body.error ?? res.status}`;
  out.textContent = text;
  if (!state.view.job) $('#summary').textContent = text;
  if (state.view.job === jobId) openJob(jobId);
}
