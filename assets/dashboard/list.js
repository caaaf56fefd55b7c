// The overview: counts, the filtered and sorted job list, and the once-a-second "… ago" refresh.
import { $, HEALTH_LABEL, ago, h, statusBadge } from './dom.js';
import { actionButtons } from './job-view.js';
import { PAGE_SIZE, state, urlOf } from './state.js';

const ATTENTION_RANK = { error: 0, offline: 1, stalled: 2, permission: 3, running: 4, pending: 5, cancelled: 6, completed: 7 };

export function rankOf(row) {
  if (row.status === 'error') return ATTENTION_RANK.error;
  if (row.health) return ATTENTION_RANK[row.health];
  return ATTENTION_RANK[row.status] ?? 9;
}

export function matches(row, v) {
  if (v.status) {
    if (v.status === 'attention') {
      if (row.status !== 'error' && !row.health) return false;
    } else if (v.status in HEALTH_LABEL) {
      if (row.health !== v.status) return false;
    } else if (row.status !== v.status) return false;
  }
  if (v.session && !(row.agent_session ?? '').toLowerCase().includes(v.session.toLowerCase())) return false;
  if (v.agent && !(row.agent ?? '').toLowerCase().includes(v.agent.toLowerCase())) return false;
  if (v.q) {
    const q = v.q.toLowerCase();
    const hay = [row.job_id, row.brief, row.last_detail, row.last_event, row.agent_session, row.agent].join('\n').toLowerCase();
    if (!hay.includes(q)) return false;
  }
  return true;
}

export function compare(a, b, sort) {
  let x;
  let y;
  if (sort === 'attention') {
    x = rankOf(a);
    y = rankOf(b);
    if (x === y) return b.updated_at < a.updated_at ? -1 : b.updated_at > a.updated_at ? 1 : 0;
  } else {
    x = a[sort] ?? '';
    y = b[sort] ?? '';
  }
  return x < y ? -1 : x > y ? 1 : 0;
}

export function visibleRows() {
  const v = state.view;
  const out = [];
  for (const row of state.jobs.values()) if (matches(row, v)) out.push(row);
  const sign = v.dir === 'desc' ? -1 : 1;
  out.sort((a, b) => sign * compare(a, b, v.sort) || (a.job_id < b.job_id ? -1 : 1));
  return out;
}

/** The counts; a count is a filter too: `onChip(key)` is called when one is pressed. */
export function renderCounts(onChip) {
  const ul = $('#counts');
  const total = state.jobs.size;
  const chips = [{ key: '', label: 'all', count: total, attention: false }, ...state.counts];
  const key = JSON.stringify([chips, state.view.status]);
  if (ul.dataset.key === key) return;
  ul.dataset.key = key;
  ul.replaceChildren(
    ...chips.map((c) =>
      h(
        'li',
        {},
        h(
          'button',
          {
            type: 'button',
            class: `chip${c.attention ? ' attention' : ''}${c.attention && c.count > 0 ? ' alert' : ''}`,
            'data-key': c.key || 'all',
            'aria-pressed': String(state.view.status === c.key),
            onclick: () => onChip(c.key),
          },
          h('span', { class: 'chip-count', text: String(c.count) }),
          h('span', { class: 'chip-label', text: c.label }),
        ),
      ),
    ),
  );
  // The status filter offers what the counts offer (the offline count exists only with presence).
  const select = $('#f-status');
  for (const c of state.counts) {
    if (!select.querySelector(`option[value="${c.key}"]`)) select.append(h('option', { value: c.key, text: c.label }));
  }
  select.value = state.view.status;
}

export function renderList() {
  const rows = visibleRows();
  const shown = rows.slice(0, state.limit);
  const tbody = $('#jobs tbody');
  const actionsCol = state.actionsEnabled;
  document.querySelector('#jobs .col-actions').hidden = !actionsCol;
  for (let i = 0; i < shown.length; i++) {
    const row = shown[i];
    let tr = state.rows.get(row.job_id);
    if (!tr) {
      tr = h('tr', { 'data-id': row.job_id });
      state.rows.set(row.job_id, tr);
    }
    if (tr._row !== row || tr._actions !== actionsCol) fillRow(tr, row, actionsCol);
    if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] ?? null);
  }
  while (tbody.children.length > shown.length) tbody.lastElementChild.remove();
  for (const id of state.rows.keys()) if (!state.jobs.has(id)) state.rows.delete(id);
  $('#summary').textContent = rows.length === state.jobs.size ? `${rows.length} jobs` : `${rows.length} of ${state.jobs.size} jobs match`;
  const more = $('#more');
  more.hidden = rows.length <= shown.length;
  more.textContent = `Show ${Math.min(PAGE_SIZE, rows.length - shown.length)} more (${rows.length - shown.length} hidden)`;
  for (const th of document.querySelectorAll('#jobs th[data-sort]')) {
    th.setAttribute('aria-sort', th.dataset.sort === state.view.sort ? (state.view.dir === 'asc' ? 'ascending' : 'descending') : 'none');
  }
  updateSuggestions();
}

export function fillRow(tr, row, actionsCol) {
  tr._row = row;
  tr._actions = actionsCol;
  tr.className = `row s-${row.status}${row.health ? ` h-${row.health}` : ''}`;
  const cells = [
    h('td', { 'data-label': 'Job' }, h('a', { href: urlOf({ ...state.view, job: row.job_id }), class: 'job-link', 'data-job': row.job_id, text: row.job_id })),
    h('td', { 'data-label': 'Status' }, statusBadge(row)),
    h('td', { 'data-label': 'Session', text: row.agent_session ?? '—' }),
    h('td', { 'data-label': 'Agent', text: row.agent ?? '—' }),
    h(
      'td',
      { 'data-label': 'Last event' },
      h('span', {}, row.last_event ? `#${row.last_seq} ${row.last_event}` : '—', row.last_detail ? h('span', { class: 'sub', text: row.last_detail }) : null),
    ),
    h('td', { 'data-label': 'Last beat', 'data-ago': row.last_beat_at ?? '', text: ago(row.last_beat_at) }),
    h('td', { 'data-label': 'Updated', 'data-ago': Date.parse(row.updated_at), text: ago(Date.parse(row.updated_at)) }),
    h('td', { 'data-label': 'Brief', class: 'brief', text: row.brief }),
  ];
  if (actionsCol) cells.push(h('td', { 'data-label': 'Actions', class: 'row-actions' }, actionButtons(row, true)));
  tr.replaceChildren(...cells);
}

export function updateSuggestions() {
  const sessions = new Set();
  const agents = new Set();
  for (const r of state.jobs.values()) {
    if (r.agent_session) sessions.add(r.agent_session);
    if (r.agent) agents.add(r.agent);
  }
  fillDatalist($('#sessions'), sessions);
  fillDatalist($('#agents'), agents);
}

export function fillDatalist(list, values) {
  const key = [...values].sort().join('\n');
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  list.replaceChildren(...[...values].sort().slice(0, 200).map((v) => h('option', { value: v })));
}

/** Updates every "… ago" on screen once a second, without touching anything else. */
export function tick() {
  for (const el of document.querySelectorAll('[data-ago]')) {
    const ms = el.dataset.ago === '' ? null : Number(el.dataset.ago);
    const text = ago(ms);
    if (el.textContent !== text) el.textContent = text;
  }
}
