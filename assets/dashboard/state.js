// The page's state and its URL: filters, sort and the open job survive a reload, and Back closes a job view.

export const PAGE_SIZE = 200;
export const FILTER_KEYS = ['status', 'session', 'agent', 'q', 'sort', 'dir', 'job'];

export const state = {
  jobs: new Map(),
  counts: [],
  actions: [],
  actionsEnabled: false,
  authRequired: false,
  broker: { state: 'connecting' },
  corrupt: [],
  /** Server clock minus ours: "12 s ago" is measured on the server's clock. */
  skew: 0,
  view: readView(),
  limit: PAGE_SIZE,
  detail: null,
  source: null,
  rows: new Map(),
  renderQueued: false,
};

export const serverNow = () => Date.now() + state.skew;

export function readView() {
  const p = new URLSearchParams(location.search);
  const v = {};
  for (const k of FILTER_KEYS) v[k] = p.get(k) ?? '';
  if (!v.sort) v.sort = 'attention';
  if (v.dir !== 'asc' && v.dir !== 'desc') v.dir = v.sort === 'attention' || v.sort === 'job_id' || v.sort === 'agent_session' || v.sort === 'agent' || v.sort === 'brief' ? 'asc' : 'desc';
  if (!/^[0-9a-f]{8}$/.test(v.job)) v.job = '';
  return v;
}

export function urlOf(view) {
  const p = new URLSearchParams();
  for (const k of FILTER_KEYS) {
    const val = view[k];
    if (!val || (k === 'sort' && val === 'attention') || (k === 'dir' && val === defaultDir(view.sort))) continue;
    p.set(k, val);
  }
  const q = p.toString();
  return q ? `/?${q}` : '/';
}

export const defaultDir = (sort) => (['attention', 'job_id', 'agent_session', 'agent', 'brief'].includes(sort) ? 'asc' : 'desc');

export function setView(patch, push = false) {
  Object.assign(state.view, patch);
  const url = urlOf(state.view);
  if (url !== location.pathname + location.search) history[push ? 'pushState' : 'replaceState'](null, '', url);
}
