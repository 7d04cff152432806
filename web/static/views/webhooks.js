// Webhook endpoints: create, edit, enable/disable, rotate the secret
// (shown once), delete; each one's deliveries with every attempt, retry.
import { h, clear, api, enc, get, request, query, everything, has, badge, errorBox, needScope, confirmDialog, secretDialog, run, toast, timeEl, userText } from '../lib.js';
import { refresher } from './threads.js';

const eventTypes = ['message.received', 'message.queued', 'message.sent', 'message.delivered', 'message.captured',
  'message.deferred', 'message.bounced', 'message.failed', 'approval.requested', 'approval.approved', 'approval.rejected'];

export async function renderList(main) {
  main.append(h('div', { class: 'view-head' }, h('h1', {}, 'Webhooks')));
  if (!has('webhooks:read')) {
    main.append(needScope('webhooks:read', 'The webhook endpoints'));
    return { back: '#/' };
  }
  const list = h('div', { class: 'list', role: 'list', 'aria-label': 'Webhook endpoints' });
  main.append(list);
  async function load() {
    try {
      const eps = await everything(api('/webhooks'));
      clear(list);
      if (!eps.length) list.append(h('p', { class: 'muted empty' }, 'No endpoint yet.'));
      for (const ep of eps) list.append(endpointRow(ep, load));
    } catch (err) {
      clear(list).append(errorBox(err));
    }
  }
  if (has('webhooks:write')) main.append(endpointForm(null, load));
  await load();
  return { back: '#/' };
}

function endpointRow(ep, reload) {
  const href = '#/webhooks/' + enc(ep.id);
  const path = api('/webhooks/' + enc(ep.id));
  const el = h('div', { class: 'item row', role: 'listitem', dataset: { href, id: ep.id } },
    h('div', { class: 'row-main' }, h('a', { class: 'open title mono', href }, ep.url),
      badge(ep.enabled ? 'enabled' : 'disabled', ep.enabled ? 'on' : 'off', ep.disabled_reason || null)),
    ep.description ? userText('p', ep.description, { class: 'preview' }) : null,
    h('p', { class: 'muted small' }, (ep.event_types.length ? ep.event_types.join(', ') : 'every event type') + ' · ' +
      (ep.inbox_ids === null ? 'every inbox' : ep.inbox_ids.length + ' inbox(es)'),
    ep.disabled_reason ? userText('span', ' · ' + ep.disabled_reason, { class: 'error-text' }) : null));
  if (has('webhooks:write')) {
    const toggle = h('button', { type: 'button', onclick: () => run(toggle, async () => {
      await request('PATCH', path, { enabled: !ep.enabled });
      toast(ep.enabled ? 'Disabled.' : 'Enabled.');
      reload();
    }) }, ep.enabled ? 'Disable' : 'Enable');
    const edit = h('button', { type: 'button', onclick: () => {
      const form = endpointForm(ep, reload);
      el.after(form);
      form.querySelector('input').focus();
      edit.disabled = true;
    } }, 'Edit');
    const rotate = h('button', { type: 'button', onclick: async () => {
      if (!await confirmDialog('Rotate the secret?', 'A new secret signs from now on; the old one also signs for 24 hours.', 'Rotate')) return;
      run(rotate, async () => {
        const r = await request('POST', path + '/rotate-secret');
        secretDialog('New signing secret', 'Shown this once: store it where the receiver verifies signatures.', r.secret);
      });
    } }, 'Rotate secret');
    const del = h('button', { type: 'button', class: 'danger quiet', onclick: async () => {
      if (!await confirmDialog('Delete this endpoint?', 'Its deliveries and their attempts are deleted with it.', 'Delete', true)) return;
      run(del, async () => { await request('DELETE', path); toast('Endpoint deleted.'); reload(); });
    } }, 'Delete');
    el.append(h('div', { class: 'row-actions' }, toggle, edit, rotate, del));
  }
  return el;
}

// endpointForm creates an endpoint (ep null) or edits one.
function endpointForm(ep, done) {
  const url = h('input', { type: 'url', name: 'url', required: true, placeholder: 'https://example.com/hooks/inboxd', value: ep ? ep.url : '', 'aria-label': 'URL' });
  const description = h('input', { name: 'description', placeholder: 'Description (optional)', value: ep && ep.description ? ep.description : '', 'aria-label': 'Description' });
  const boxes = eventTypes.map((t) => h('label', { class: 'check' }, h('input', { type: 'checkbox', value: t, checked: !!ep && ep.event_types.includes(t) }), t));
  const button = h('button', { type: 'submit', class: 'primary' }, ep ? 'Save' : 'Create endpoint');
  const form = h('form', { class: 'card', onsubmit: (e) => {
    e.preventDefault();
    run(button, async () => {
      const body = { url: url.value.trim(), description: description.value.trim() || null,
        event_types: boxes.map((b) => b.firstChild).filter((c) => c.checked).map((c) => c.value) };
      if (ep) {
        await request('PATCH', api('/webhooks/' + enc(ep.id)), body);
        toast('Saved.');
      } else {
        const r = await request('POST', api('/webhooks'), body);
        secretDialog('Signing secret', 'Shown this once: the receiver verifies each delivery’s signature with it (Standard Webhooks).', r.secret);
        form.reset();
      }
      done();
      if (ep) form.remove();
    });
  } }, h('h2', {}, ep ? 'Edit endpoint' : 'New endpoint'), url, description,
  h('fieldset', {}, h('legend', {}, 'Event types (none: every type)'), h('div', { class: 'checks' }, boxes)),
  h('div', { class: 'actions' }, ep ? h('button', { type: 'button', onclick: () => form.remove() }, 'Cancel') : null, button));
  return form;
}

export async function renderDeliveries(main, { args }) {
  const [id] = args;
  const path = api('/webhooks/' + enc(id));
  const ep = await get(path);
  main.append(h('div', { class: 'view-head' }, h('div', { class: 'crumbs' }, h('a', { href: '#/webhooks' }, 'Webhooks'), ' / '),
    h('h1', { class: 'mono' }, ep.url), h('p', { class: 'muted' }, 'Deliveries, newest first. Open one to see every attempt.')));
  const list = h('div', { class: 'list', role: 'list', 'aria-label': 'Deliveries' });
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'Older');
  main.append(list, more);
  let cursor = null;
  const open = new Set(); // the deliveries shown with their attempts
  async function show(first) {
    try {
      const page = await get(query(path + '/deliveries', { limit: 25, cursor: first ? null : cursor }));
      if (first) clear(list);
      for (const d of page.data) list.append(deliveryRow(path, d, open));
      if (first && !page.data.length) list.append(h('p', { class: 'muted empty' }, 'No delivery yet: one is made for each event the endpoint takes.'));
      cursor = page.next_cursor;
      more.hidden = !page.has_more;
    } catch (err) {
      clear(list).append(errorBox(err));
    }
  }
  more.addEventListener('click', () => run(more, () => show(false)));
  await show(true);
  // Every event may make a delivery, and a retry changes one: reload.
  return refresher(() => show(true), () => true, '#/webhooks');
}

function deliveryRow(path, d, open) {
  const dpath = path + '/deliveries/' + enc(d.id);
  const attempts = h('div', { class: 'attempts', hidden: true });
  const status = badge(d.status, 'state ' + d.status);
  const count = h('span', { class: 'muted small' }, d.attempt_count + ' attempt' + (d.attempt_count === 1 ? '' : 's'));
  const toggle = h('button', { type: 'button', class: 'open quiet', 'aria-expanded': 'false', onclick: () => {
    attempts.hidden = !attempts.hidden;
    toggle.setAttribute('aria-expanded', String(!attempts.hidden));
    if (attempts.hidden) open.delete(d.id); else { open.add(d.id); loadAttempts(); }
  } }, d.event_type);
  const el = h('div', { class: 'item row delivery', role: 'listitem', dataset: { id: d.id } },
    h('div', { class: 'row-main' }, toggle, status, count, h('span', { class: 'muted small' }, 'event ' + d.event_id), timeEl(d.created_at)),
    d.next_attempt_at && d.status === 'pending' ? h('p', { class: 'muted small' }, 'Next attempt ', timeEl(d.next_attempt_at)) : null, attempts);
  async function loadAttempts() {
    try {
      const full = await get(dpath);
      status.textContent = full.status;
      status.className = 'badge state ' + full.status;
      count.textContent = full.attempt_count + ' attempt' + (full.attempt_count === 1 ? '' : 's');
      clear(attempts).append(full.attempts.length ? h('table', { class: 'table' },
        h('thead', {}, h('tr', {}, h('th', {}, 'At'), h('th', {}, 'Status'), h('th', {}, 'Duration'), h('th', {}, 'Response or error'))),
        h('tbody', {}, full.attempts.map((a) => h('tr', {},
          h('td', {}, timeEl(a.at)), h('td', {}, a.status_code === null ? '—' : String(a.status_code)), h('td', {}, a.duration_ms + ' ms'),
          h('td', {}, a.error ? userText('span', a.error, { class: 'error-text' }) : null, a.response_excerpt ? userText('pre', a.response_excerpt, { class: 'excerpt' }) : null)))))
        : h('p', { class: 'muted small' }, 'No attempt yet.'));
    } catch (err) {
      clear(attempts).append(errorBox(err));
    }
  }
  if (open.has(d.id)) {
    attempts.hidden = false;
    toggle.setAttribute('aria-expanded', 'true');
    loadAttempts();
  }
  if (has('webhooks:write') && d.status !== 'delivered') {
    const retry = h('button', { type: 'button', class: 'retry', onclick: () => run(retry, async () => {
      await request('POST', dpath + '/retry');
      toast('Retrying now.');
      open.add(d.id);
      // The attempt is made by the delivery worker, not by this request:
      // look again until it shows.
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setTimeout(r, 500));
        const now = await get(dpath);
        if (now.attempt_count > d.attempt_count) break;
      }
      attempts.hidden = false;
      loadAttempts();
    }) }, 'Retry');
    el.querySelector('.row-main').append(retry);
  }
  return el;
}
