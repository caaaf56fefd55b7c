// DOM and formatting helpers. Every string from the server goes into the page as text (textContent), never as HTML.
import { serverNow } from './state.js';

export const HEALTH_LABEL = { stalled: 'stalled', permission: 'waiting for permission', offline: 'agent offline' };

export const $ = (sel) => document.querySelector(sel);

/** A DOM element: attributes (class, data-*, aria-*, …) and children (strings become text nodes). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export function ago(ms) {
  if (ms === null || ms === undefined) return '—';
  const s = Math.max(0, Math.round((serverNow() - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function span(ms) {
  if (ms === null) return '';
  const s = Math.round(ms / 1000);
  if (Math.abs(ms) < 1000) return `+${ms} ms`;
  if (s < 60) return `+${s} s`;
  if (s < 3600) return `+${Math.floor(s / 60)} min ${s % 60} s`;
  return `+${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });

export function statusBadge(row) {
  const wrap = h('span', { class: 'badges' }, h('span', { class: `badge s-${row.status}`, text: row.status }));
  if (row.health) wrap.append(' ', h('span', { class: `badge h-${row.health}`, text: HEALTH_LABEL[row.health] ?? row.health }));
  return wrap;
}

export function api(path, init = {}) {
  return fetch(path, { credentials: 'same-origin', ...init, headers: { 'Content-Type': 'application/json', ...(init.headers ?? {}) } });
}
