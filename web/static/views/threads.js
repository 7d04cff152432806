// An inbox: its threads (search, paging) and its feed; clearing it.
import { h, clear, api, enc, get, request, query, has, badge, errorBox, needScope, confirmDialog, run, toast, timeEl, addr, userText } from '../lib.js';

// inboxHeader is the head of every view of one inbox: its address, its
// tabs, and (with messages:delete) the button that clears it.
export async function inboxHeader(inboxId, active, onCleared) {
  let ib = { id: inboxId, address: inboxId };
  if (has('inboxes:read')) {
    try { ib = await get(api('/inboxes/' + enc(inboxId))); } catch (err) { if (err.status === 404) throw err; }
  }
  const base = '#/inbox/' + enc(inboxId);
  const tab = (label, href, name) => h('a', { href, class: 'tab', 'aria-current': active === name ? 'page' : null }, label);
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Inbox views' },
    tab('Threads', base, 'threads'), tab('Feed', base + '/feed', 'feed'),
    has('approvals:read') ? tab('Approvals', base + '/approvals', 'approvals') : null);
  const actions = h('div', { class: 'view-actions' });
  if (has('messages:delete') && onCleared) {
    const button = h('button', { type: 'button', class: 'danger', onclick: async () => {
      if (!await confirmDialog('Clear ' + ib.address + '?', 'Every message of this inbox is deleted. The inbox and its settings stay.', 'Delete all messages', true)) return;
      run(button, async () => {
        const r = await request('DELETE', api('/inboxes/' + enc(inboxId) + '/messages'));
        toast('Deleted ' + r.deleted_count + ' message' + (r.deleted_count === 1 ? '' : 's') + '.');
        onCleared();
      });
    } }, 'Clear inbox');
    actions.append(button);
  }
  return h('div', { class: 'view-head' },
    h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Inboxes'), ' / '),
    h('h1', {}, ib.address, ib.environment === 'test' ? badge('test', 'test') : null),
    ib.deferred_count ? h('p', { class: 'notice' }, ib.deferred_count + ' message(s) held by the deferred parent lookup: they appear within ten minutes.') : null,
    h('div', { class: 'bar' }, tabs, actions));
}

function searchForm(value, onSearch, label) {
  const input = h('input', { type: 'search', name: 'q', value, placeholder: label + ' (/ to focus)', 'aria-label': label, dir: 'auto' });
  return h('form', { class: 'search', role: 'search', onsubmit: (e) => { e.preventDefault(); onSearch(input.value.trim()); } },
    input, h('button', { type: 'submit' }, 'Search'));
}

// pagedList shows a list a page at a time: the first page, refreshed by
// reload(), and "Older" for the next ones.
function pagedList(list, fetchPage, rowOf, empty) {
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'Older');
  let cursor = null;
  async function show(first) {
    let page;
    try {
      page = await fetchPage(first ? null : cursor);
    } catch (err) {
      if (first) clear(list).append(errorBox(err)); else toast(err.message, 'error');
      return;
    }
    if (first) clear(list);
    for (const r of page.data) list.append(rowOf(r));
    if (first && !page.data.length) list.append(h('p', { class: 'muted empty' }, empty));
    cursor = page.next_cursor;
    more.hidden = !page.has_more;
  }
  more.addEventListener('click', () => run(more, () => show(false)));
  return { more, reload: () => show(true) };
}

export async function renderThreads(main, { args, params, go }) {
  const [inboxId] = args;
  const q = params.get('q') || '';
  const list = h('div', { class: 'list', role: 'list', 'aria-label': 'Threads' });
  const paged = pagedList(list,
    (cursor) => get(query(api('/inboxes/' + enc(inboxId) + '/threads'), { q, cursor, limit: 25 })),
    (t) => threadRow(inboxId, t), q ? 'No thread matches.' : 'No mail yet. Send some to this inbox over SMTP.');
  main.append(await inboxHeader(inboxId, 'threads', () => paged.reload()));
  if (!has('threads:read')) {
    main.append(needScope('threads:read', 'The thread list'), has('messages:read') ? h('p', {}, h('a', { href: '#/inbox/' + enc(inboxId) + '/feed' }, 'Open the feed instead.')) : null);
    return { back: '#/' };
  }
  main.append(searchForm(q, (v) => go('#/inbox/' + enc(inboxId) + (v ? '?q=' + enc(v) : '')), 'Search threads'), list, paged.more);
  await paged.reload();
  return refresher(paged.reload, (ev) => ev.data && ev.data.inbox_id === inboxId && ev.type.startsWith('message.'), '#/');
}

function threadRow(inboxId, t) {
  const href = '#/inbox/' + enc(inboxId) + '/thread/' + enc(t.id);
  return h('div', { class: 'item row thread', role: 'listitem', dataset: { href, id: t.id } },
    h('div', { class: 'row-main' },
      h('a', { class: 'open title', href, dir: 'auto' }, t.subject || '(no subject)'),
      t.message_count > 1 ? h('span', { class: 'count-pill', title: t.message_count + ' messages' }, String(t.message_count)) : null),
    h('div', { class: 'row-meta' }, badge(t.last_message_direction === 'outbound' ? 'sent' : 'received', t.last_message_direction), timeEl(t.last_message_at)),
    userText('p', t.preview, { class: 'preview' }));
}

export async function renderFeed(main, { args, params, go }) {
  const [inboxId] = args;
  const q = params.get('q') || '';
  const direction = params.get('direction') || '';
  const list = h('div', { class: 'list', role: 'list', 'aria-label': 'Messages' });
  const paged = pagedList(list,
    (cursor) => get(query(api('/inboxes/' + enc(inboxId) + '/messages'), { q, direction, cursor, limit: 25 })),
    (m) => feedRow(inboxId, m), 'No message.');
  main.append(await inboxHeader(inboxId, 'feed', () => paged.reload()));
  if (!has('messages:read')) {
    main.append(needScope('messages:read', 'The feed'));
    return { back: '#/' };
  }
  const target = (v, d) => '#/inbox/' + enc(inboxId) + '/feed' + (v || d ? '?' + new URLSearchParams({ ...(v ? { q: v } : {}), ...(d ? { direction: d } : {}) }) : '');
  const dir = h('select', { 'aria-label': 'Direction', onchange: () => go(target(q, dir.value)) },
    h('option', { value: '' }, 'Both directions'), h('option', { value: 'inbound', selected: direction === 'inbound' }, 'Received'),
    h('option', { value: 'outbound', selected: direction === 'outbound' }, 'Sent'));
  main.append(h('div', { class: 'bar' }, searchForm(q, (v) => go(target(v, direction)), 'Search messages'), dir), list, paged.more);
  await paged.reload();
  return refresher(paged.reload, (ev) => ev.data && ev.data.inbox_id === inboxId && ev.type.startsWith('message.'), '#/inbox/' + enc(inboxId));
}

function feedRow(inboxId, m) {
  const href = '#/inbox/' + enc(inboxId) + '/thread/' + enc(m.thread_id) + '?m=' + enc(m.id);
  const who = m.direction === 'outbound' ? 'To: ' + (m.to || []).map(addr).join(', ') : addr(m.from);
  return h('div', { class: 'item row', role: 'listitem', dataset: { href, id: m.id } },
    h('div', { class: 'row-main' }, userText('span', who, { class: 'who' }), h('a', { class: 'open title', href, dir: 'auto' }, m.subject || '(no subject)')),
    h('div', { class: 'row-meta' }, badge(m.direction === 'outbound' ? m.state : 'received', m.direction),
      m.attachments.length ? badge(m.attachments.length + ' attachment' + (m.attachments.length > 1 ? 's' : '')) : null, timeEl(m.created_at)),
    userText('p', m.preview, { class: 'preview' }));
}

// refresher reloads a view shortly after the events it cares about,
// once for a burst.
export function refresher(reload, wants, back) {
  let timer = null;
  return {
    back,
    onEvent(ev) {
      if (!wants(ev)) return;
      clearTimeout(timer);
      timer = setTimeout(reload, 120);
    },
    dispose() { clearTimeout(timer); },
  };
}
