// The console's entry: sign-in, the hash router, the navigation, live
// updates over Server-Sent Events, and the keyboard.
import { h, clear, session, get, request, toast, has, ApiError } from './lib.js';
import * as signin from './views/signin.js';
import * as inboxes from './views/inboxes.js';
import * as threads from './views/threads.js';
import * as thread from './views/thread.js';
import * as approvals from './views/approvals.js';
import * as webhooks from './views/webhooks.js';
import * as events from './views/events.js';
import * as keys from './views/keys.js';

const main = document.getElementById('main');

// Routes: a hash path pattern and its view. A view's render(main, ctx)
// returns what the app needs of it: onEvent(event) for live updates,
// back (the hash Esc goes to), dispose().
const routes = [
  [/^\/?$/, inboxes.render],
  [/^\/inbox\/([^/]+)$/, threads.renderThreads],
  [/^\/inbox\/([^/]+)\/feed$/, threads.renderFeed],
  [/^\/inbox\/([^/]+)\/thread\/([^/]+)$/, thread.render],
  [/^\/inbox\/([^/]+)\/approvals$/, approvals.render],
  [/^\/approvals$/, approvals.render],
  [/^\/webhooks$/, webhooks.renderList],
  [/^\/webhooks\/([^/]+)$/, webhooks.renderDeliveries],
  [/^\/events$/, events.render],
  [/^\/keys$/, keys.render],
];

const sections = [
  ['Inboxes', '#/', 'inboxes:read', /^\/?$|^\/inbox\//],
  ['Approvals', '#/approvals', 'approvals:read', /^\/approvals/],
  ['Webhooks', '#/webhooks', 'webhooks:read', /^\/webhooks/],
  ['Events', '#/events', 'events:read', /^\/events/],
  ['API keys', '#/keys', 'keys:write', /^\/keys/],
];

let current = null; // the view shown
let generation = 0; // of route(): a render that finishes late is dropped

export function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, qs] = raw.split('?');
  return { path, params: new URLSearchParams(qs || '') };
}

// decodeArgs is a route's arguments decoded, or null when one is not
// valid percent-encoding (decodeURIComponent throws).
function decodeArgs(m) {
  try {
    return m.slice(1).map(decodeURIComponent);
  } catch {
    return null;
  }
}

async function route() {
  if (!session.current) return;
  const { path, params } = parseHash();
  const gen = ++generation;
  if (current && current.dispose) current.dispose();
  current = null;
  renderNav(path);
  for (const [re, render] of routes) {
    const m = path.match(re);
    if (!m) continue;
    // Each view renders into a root of its own: one still loading when
    // another replaces it fills a root that is no longer shown.
    const args = decodeArgs(m);
    if (!args) break; // a malformed %-escape names no page
    const root = h('div', { class: 'view' });
    clear(main).append(root);
    try {
      const view = await render(root, { args, params, go });
      if (gen === generation) current = view || {};
      else if (view && view.dispose) view.dispose();
    } catch (err) {
      if (gen !== generation) return;
      if (err instanceof ApiError && err.status === 401) return; // signed out meanwhile
      clear(root).append(h('p', { class: 'notice error', role: 'alert' }, err.message));
      current = {};
    }
    return;
  }
  clear(main).append(h('p', { class: 'notice' }, 'There is no such page. ', h('a', { href: '#/' }, 'Go to the inboxes.')));
  current = {};
}

function renderNav(path) {
  const nav = clear(document.getElementById('nav'));
  for (const [label, href, scope, active] of sections) {
    if (!has(scope)) continue;
    nav.append(h('a', { href, 'aria-current': active.test(path) ? 'page' : null }, label));
  }
}

// Live updates: one EventSource over the event log; the browser resumes
// it from the last event's id after a drop (Last-Event-ID), and the
// server ends it when the session ends.
let source = null;
let lastId = ''; // the cursor of the last event seen: where a new stream resumes
const live = document.getElementById('live');

function setLive(text, state) {
  live.textContent = text;
  live.dataset.state = state;
}

function connect() {
  disconnect();
  if (!has('events:read')) {
    setLive('not live', 'off');
    live.title = 'Live updates need the scope events:read, which this API key lacks; reload to see new mail.';
    return;
  }
  const es = new EventSource('/console/events' + (lastId ? '?after=' + encodeURIComponent(lastId) : ''));
  source = es;
  live.title = 'New mail, events and delivery updates appear as they happen.';
  setLive('connecting…', 'connecting');
  es.onopen = () => setLive('live', 'on');
  es.onmessage = (m) => {
    let ev;
    if (m.lastEventId) lastId = m.lastEventId;
    try { ev = JSON.parse(m.data); } catch { return; }
    document.dispatchEvent(new CustomEvent('inboxd:event', { detail: ev }));
    if (current && current.onEvent) current.onEvent(ev);
  };
  es.addEventListener('ready', (m) => { if (m.lastEventId) lastId = m.lastEventId; });
  es.addEventListener('reset', () => { lastId = ''; if (current) route(); });
  es.addEventListener('ended', () => { es.close(); ended(); });
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      // Refused (the session ended, or the key lost events:read): ask.
      setLive('offline', 'off');
      get('/console/session').then(() => setTimeout(() => { if (source === es) connect(); }, 3000), () => {});
    } else {
      setLive('reconnecting…', 'connecting');
    }
  };
}

function disconnect() {
  if (source) source.close();
  source = null;
}

function ended() {
  if (!session.current) return;
  session.current = null;
  disconnect();
  showSignIn('Your session has ended: sign in again.');
}

function showSignIn(message) {
  document.getElementById('top').hidden = true;
  if (current && current.dispose) current.dispose();
  current = null;
  signin.render(main, { message, signedIn });
}

function signedIn(s) {
  session.current = s;
  lastId = '';
  document.getElementById('top').hidden = false;
  document.getElementById('keyname').textContent = s.name || s.key_id;
  document.getElementById('keyname').title = 'Signed in with API key ' + s.key_id + ' (' + s.scopes.join(' ') + ')';
  connect();
  route();
}

document.getElementById('signout').addEventListener('click', async () => {
  try {
    await request('DELETE', '/console/session');
  } catch (err) {
    toast(err.message, 'error');
    return;
  }
  session.current = null;
  disconnect();
  showSignIn('Signed out.');
});

session.onEnded = ended;
window.addEventListener('hashchange', route);
// A page left for another (kept in the back/forward cache) gives its
// stream's connection back: browsers allow only six per server, and
// each console page would otherwise hold one. It resumes on return.
window.addEventListener('pagehide', disconnect);
window.addEventListener('pageshow', (e) => { if (e.persisted && session.current) connect(); });

// The keyboard: j/k move through the items of a list, Enter opens the
// selected one, / searches, Esc goes back (or leaves a field).
function items() {
  return [...main.querySelectorAll('.item')].filter((el) => el.offsetParent !== null);
}

function select(el) {
  for (const s of main.querySelectorAll('.item.selected')) {
    s.classList.remove('selected');
    s.removeAttribute('aria-selected');
  }
  el.classList.add('selected');
  el.setAttribute('aria-selected', 'true');
  if (!el.hasAttribute('tabindex')) el.tabIndex = -1;
  el.focus({ preventScroll: true });
  el.scrollIntoView({ block: 'nearest' });
}

function openItem(el) {
  if (el.dataset.href) go(el.dataset.href);
  else {
    const target = el.querySelector('.open');
    if (target) target.click();
  }
}

document.addEventListener('keydown', (e) => {
  if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || !session.current) return;
  if (document.querySelector('dialog[open]')) return;
  const t = e.target;
  const typing = t instanceof Element && t.closest('input, textarea, select, [contenteditable]');
  if (e.key === 'Escape') {
    if (typing) { t.blur(); return; }
    if (current && current.back) { e.preventDefault(); go(current.back); }
    return;
  }
  if (typing) return;
  if (e.key === '/') {
    const s = main.querySelector('input[type=search]');
    if (s) { e.preventDefault(); s.focus(); s.select(); }
  } else if (e.key === 'j' || e.key === 'k') {
    const list = items();
    if (!list.length) return;
    e.preventDefault();
    const i = list.findIndex((el) => el.classList.contains('selected'));
    select(list[Math.max(0, Math.min(list.length - 1, i < 0 ? 0 : i + (e.key === 'j' ? 1 : -1)))]);
  } else if (e.key === 'Enter') {
    const sel = t instanceof Element && t.closest('.item');
    if (sel && sel === t) { e.preventDefault(); openItem(sel); }
  }
});

// Boot: who is signed in?
get('/console/session').then(signedIn, () => showSignIn(''));
