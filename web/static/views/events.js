// The event log, newest first, filtered by type and inbox; new events
// arrive live at the top.
import { h, clear, api, enc, get, query, everything, has, badge, errorBox, needScope, run, timeEl } from '../lib.js';

const types = ['message.received', 'message.queued', 'message.sent', 'message.delivered', 'message.captured',
  'message.deferred', 'message.bounced', 'message.failed', 'approval.requested', 'approval.approved', 'approval.rejected'];

export async function render(main, { params, go }) {
  main.append(h('div', { class: 'view-head' }, h('h1', {}, 'Events')));
  if (!has('events:read')) {
    main.append(needScope('events:read', 'The event log'));
    return { back: '#/' };
  }
  const type = params.get('type') || '';
  const inbox = params.get('inbox_id') || '';
  const inboxes = has('inboxes:read') ? await everything(api('/inboxes')).catch(() => []) : [];
  const names = new Map(inboxes.map((ib) => [ib.id, ib.address]));
  const target = (t, i) => '#/events' + (t || i ? '?' + new URLSearchParams({ ...(t ? { type: t } : {}), ...(i ? { inbox_id: i } : {}) }) : '');
  const typeSel = h('select', { 'aria-label': 'Event type', onchange: () => go(target(typeSel.value, inbox)) },
    h('option', { value: '' }, 'Every type'), types.map((t) => h('option', { value: t, selected: t === type }, t)));
  const inboxSel = inboxes.length ? h('select', { 'aria-label': 'Inbox', onchange: () => go(target(type, inboxSel.value)) },
    h('option', { value: '' }, 'Every inbox'), inboxes.map((ib) => h('option', { value: ib.id, selected: ib.id === inbox }, ib.address))) : null;
  const list = h('div', { class: 'list events', role: 'list', 'aria-label': 'Events, newest first' });
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'Older');
  main.append(h('form', { class: 'bar filters', onsubmit: (e) => e.preventDefault() }, typeSel, inboxSel), list, more);

  let older = null;
  async function page(before) {
    const r = await get(query('/console/events/recent', { type, inbox_id: inbox, before, limit: 50 }));
    for (const x of r.data) list.append(row(x.event, names));
    older = r.older;
    more.hidden = !older;
    if (!before && !r.data.length) list.append(h('p', { class: 'muted empty' }, 'No event yet.'));
  }
  more.addEventListener('click', () => run(more, () => page(older)));
  try {
    await page(null);
  } catch (err) {
    clear(list).append(errorBox(err));
  }
  return {
    back: '#/',
    onEvent(ev) {
      if ((type && ev.type !== type) || (inbox && (!ev.data || ev.data.inbox_id !== inbox))) return;
      const empty = list.querySelector('.empty');
      if (empty) empty.remove();
      const el = row(ev, names);
      el.classList.add('fresh');
      list.prepend(el);
    },
  };
}

function row(ev, names) {
  const d = ev.data || {};
  const links = [];
  if (d.inbox_id && d.thread_id) {
    links.push(h('a', { href: '#/inbox/' + enc(d.inbox_id) + '/thread/' + enc(d.thread_id) + (d.message_id ? '?m=' + enc(d.message_id) : '') }, 'thread'));
  }
  if (d.approval_id && d.inbox_id) links.push(h('a', { href: '#/inbox/' + enc(d.inbox_id) + '/approvals' }, 'approvals'));
  const json = h('pre', { class: 'raw', hidden: true }, JSON.stringify(ev, null, 2));
  const toggle = h('button', { type: 'button', class: 'open quiet mono', 'aria-expanded': 'false', onclick: () => {
    json.hidden = !json.hidden;
    toggle.setAttribute('aria-expanded', String(!json.hidden));
  } }, ev.type);
  const recipients = (d.recipients || []).map((r) => r.email + ': ' + r.delivery_status + (r.smtp_code ? ' (' + r.smtp_code + ')' : '')).join(', ');
  return h('div', { class: 'item row event', role: 'listitem', dataset: { id: ev.id, type: ev.type } },
    h('div', { class: 'row-main' }, toggle, badge(ev.type.split('.')[0], ev.type.replace('.', '-')),
      d.inbox_id ? h('span', { class: 'muted small' }, names.get(d.inbox_id) || d.inbox_id) : null,
      d.simulated ? badge('simulated', 'simulated') : null, d.echo ? badge('echo', 'echo') : null,
      links.length ? h('span', { class: 'links' }, links) : null, timeEl(ev.created_at)),
    recipients ? h('p', { class: 'muted small', dir: 'auto' }, recipients) : null, json);
}
