// Shared helpers of the console: building DOM (text only: nothing a
// sender wrote is ever parsed as HTML), calling the JSON API with the
// session cookie, formatting, dialogs and toasts.

// h builds an element: props are attributes (on* are listeners, "text"
// its textContent), children are nodes, strings (inserted as text), arrays
// or nothing (null, false, undefined).
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, ...children);
  return el;
}

export function append(el, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// userText is text a sender (or any user) wrote: its own direction, so
// Arabic and Hebrew read right to left beside the console's own text.
export function userText(tag, text, props) {
  return h(tag, { dir: 'auto', ...props }, text ?? '');
}

export const enc = encodeURIComponent;

// session is who is signed in (GET /console/session), or null.
export const session = { current: null, onEnded: null };

export function has(scope) {
  return !!session.current && session.current.scopes.includes(scope);
}

export class ApiError extends Error {
  constructor(status, code, message, param) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = param;
  }
}

// request calls the API (or a console route) with the session cookie and
// returns the JSON answer; an error answer throws an ApiError with the
// API's code and message. A 401 means the session has ended.
export async function request(method, path, body, headers) {
  const opts = { method, credentials: 'same-origin', headers: { ...(headers || {}) } };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, opts);
  } catch {
    throw new ApiError(0, 'network', 'The server cannot be reached.');
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const e = (data && data.error) || {};
    const err = new ApiError(res.status, e.code || 'http_' + res.status, e.message || res.statusText || 'Request failed.', e.param);
    if (res.status === 401 && session.onEnded && !path.startsWith('/console/session')) session.onEnded(err);
    throw err;
  }
  return data;
}

export const get = (path) => request('GET', path);

// api is the path of a project route of the JSON API.
export function api(path) {
  return '/v1/projects/' + enc(session.current.project_id) + path;
}

// query appends the parameters that have a value.
export function query(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? path + (path.includes('?') ? '&' : '?') + s : path;
}

// everything reads every page of a list (for the short lists: inboxes,
// approvals of an inbox).
export async function everything(path, max = 20) {
  const rows = [];
  let cursor = null;
  for (let i = 0; i < max; i++) {
    const page = await get(query(path, { limit: 100, cursor }));
    rows.push(...page.data);
    if (!page.has_more) break;
    cursor = page.next_cursor;
  }
  return rows;
}

// Formatting.

// The formatters are made once: toLocale…String makes one at every call,
// which a 200-message thread would feel.
const dayTime = new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit' });
const monthDay = new Intl.DateTimeFormat([], { month: 'short', day: 'numeric' });
const fullDate = new Intl.DateTimeFormat([], { year: 'numeric', month: 'short', day: 'numeric' });
const full = new Intl.DateTimeFormat([], { dateStyle: 'medium', timeStyle: 'medium' });

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return dayTime.format(d);
  return (d.getFullYear() === now.getFullYear() ? monthDay : fullDate).format(d);
}

export function fullTime(iso) {
  return iso ? full.format(new Date(iso)) : '';
}

export function timeEl(iso) {
  return iso ? h('time', { datetime: iso, title: fullTime(iso) }, when(iso)) : '';
}

export function addr(a) {
  if (!a) return '';
  return a.name ? a.name + ' <' + a.email + '>' : a.email;
}

export function addrs(list) {
  return (list || []).map(addr).join(', ');
}

export function size(n) {
  if (n < 1024) return n + ' B';
  if (n < 1 << 20) return (n / 1024).toFixed(1) + ' KB';
  return (n / (1 << 20)).toFixed(1) + ' MB';
}

export function badge(text, kind, title) {
  return h('span', { class: 'badge' + (kind ? ' ' + kind : ''), title }, text);
}

// Notices: an error answer, or a scope the key lacks.

export function errorBox(err) {
  return h('p', { class: 'notice error', role: 'alert' }, err instanceof ApiError || err instanceof Error ? err.message : String(err));
}

export function needScope(scope, what) {
  return h('p', { class: 'notice', role: 'note' }, `${what} needs the scope ${scope}, which this API key lacks.`);
}

export function toast(text, kind) {
  const t = h('div', { class: 'toast' + (kind ? ' ' + kind : ''), role: kind === 'error' ? 'alert' : 'status' }, text);
  document.getElementById('toasts').append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000);
}

// run calls fn for a button, disabled while it runs; an error becomes a
// toast.
export async function run(button, fn) {
  if (button) button.disabled = true;
  try {
    return await fn();
  } catch (err) {
    toast(err.message, 'error');
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

// Dialogs (a <dialog>, modal, closed by Esc).

function dialog(...content) {
  const d = h('dialog', { class: 'dialog' }, ...content);
  document.body.append(d);
  d.addEventListener('close', () => d.remove());
  d.showModal();
  return d;
}

export function confirmDialog(title, text, action, danger) {
  return new Promise((resolve) => {
    let ok = false;
    const yes = h('button', { type: 'button', class: danger ? 'danger' : 'primary', onclick: () => { ok = true; d.close(); } }, action);
    const no = h('button', { type: 'button', onclick: () => d.close() }, 'Cancel');
    const d = dialog(h('h2', {}, title), h('p', {}, text), h('div', { class: 'actions' }, no, yes));
    d.addEventListener('close', () => resolve(ok));
    yes.focus();
  });
}

// secretDialog shows a secret that is shown only this once.
export function secretDialog(title, text, secret) {
  const field = h('input', { type: 'text', readonly: true, value: secret, class: 'secret', 'aria-label': title, spellcheck: 'false' });
  const copy = h('button', { type: 'button', onclick: async () => {
    field.select();
    try { await navigator.clipboard.writeText(secret); toast('Copied.'); } catch { document.execCommand && document.execCommand('copy'); }
  } }, 'Copy');
  const d = dialog(h('h2', {}, title), h('p', {}, text), h('div', { class: 'row-inline' }, field, copy),
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'primary', onclick: () => d.close() }, 'Done')));
  field.focus();
  field.select();
}

// idempotencyKey names one send, so a retried click never sends twice.
export function idempotencyKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}
