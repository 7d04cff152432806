// The inboxes, with their counts (threads, messages, held, pending
// approvals); create, delete and the send policy with inboxes:write.
import { h, clear, api, enc, get, request, everything, has, session, badge, errorBox, confirmDialog, run, toast, userText } from '../lib.js';

const policies = [['allow', 'Send freely'], ['approve_external', 'Approve external'], ['approve_all', 'Approve all']];

export async function render(main) {
  const list = h('div', { class: 'list', role: 'list' });
  const head = h('div', { class: 'view-head' }, h('h1', {}, 'Inboxes'));
  main.append(head, list);
  if (has('inboxes:write')) main.append(createForm(() => load()));

  const counts = new Map(); // inbox id → its count cells
  async function load() {
    let inboxes;
    if (has('inboxes:read')) {
      try {
        inboxes = await everything(api('/inboxes'));
      } catch (err) {
        clear(list).append(errorBox(err));
        return;
      }
    } else if (session.current.inbox_ids) {
      // Without inboxes:read the key still knows its inboxes by id.
      inboxes = session.current.inbox_ids.map((id) => ({ id, address: id }));
      head.append(h('p', { class: 'notice' }, 'This API key lacks inboxes:read: its inboxes are listed by id, without their details.'));
    } else {
      clear(list).append(h('p', { class: 'notice' }, 'Listing inboxes needs the scope inboxes:read, which this API key lacks.'));
      return;
    }
    clear(list);
    counts.clear();
    if (!inboxes.length) list.append(h('p', { class: 'muted' }, 'No inboxes yet.'));
    for (const ib of inboxes) list.append(row(ib));
    refreshCounts();
  }

  function row(ib) {
    const href = '#/inbox/' + enc(ib.id);
    const cells = h('p', { class: 'counts' });
    counts.set(ib.id, { cells, ib });
    const actions = h('div', { class: 'row-actions' });
    if (has('inboxes:write') && ib.send_policy) {
      const select = h('select', { 'aria-label': 'Send policy of ' + ib.address, onchange: () => run(select, async () => {
        await request('PATCH', api('/inboxes/' + enc(ib.id)), { send_policy: select.value });
        toast('Send policy of ' + ib.address + ': ' + select.value);
      }) }, policies.map(([v, label]) => h('option', { value: v, selected: v === ib.send_policy }, label)));
      const del = h('button', { type: 'button', class: 'quiet danger', onclick: async () => {
        if (!await confirmDialog('Delete ' + ib.address + '?', 'The inbox and all its mail, threads and approvals are deleted for good.', 'Delete inbox', true)) return;
        await run(del, async () => { await request('DELETE', api('/inboxes/' + enc(ib.id))); toast('Deleted ' + ib.address); load(); });
      } }, 'Delete');
      actions.append(select, del);
    }
    return h('div', { class: 'item row', role: 'listitem', dataset: { href, id: ib.id } },
      h('div', { class: 'row-main' },
        h('a', { class: 'open title', href }, ib.address),
        ib.display_name ? userText('span', ib.display_name, { class: 'muted' }) : null,
        ib.environment === 'test' ? badge('test', 'test', 'A test inbox: it never sends outside the gateway.') : null,
        ib.send_policy && ib.send_policy !== 'allow' ? badge(ib.send_policy.replace('_', ' '), 'policy') : null),
      actions, cells);
  }

  async function refreshCounts() {
    if (!has('inboxes:read')) return;
    await Promise.all([...counts].map(async ([id, { cells }]) => {
      try {
        const n = await get('/console/inboxes/' + enc(id) + '/counts');
        const cell = (v, one, many, cls) => v === null ? null : h('span', { class: 'count' + (cls && v ? ' ' + cls : '') }, v + ' ' + (v === 1 ? one : many));
        clear(cells).append(cell(n.threads, 'thread', 'threads'), cell(n.messages, 'message', 'messages'),
          cell(n.deferred, 'held', 'held', 'warn'), cell(n.pending_approvals, 'pending approval', 'pending approvals', 'warn'));
      } catch {
        clear(cells);
      }
    }));
  }

  await load();
  let timer = null;
  let reload = false;
  return {
    onEvent(ev) {
      // Mail to a new address can create an inbox (--accept domain, any).
      if (ev.data && ev.data.inbox_id && !counts.has(ev.data.inbox_id)) reload = true;
      clearTimeout(timer);
      timer = setTimeout(() => {
        const all = reload;
        reload = false;
        if (all) load(); else refreshCounts();
      }, 150);
    },
    dispose() { clearTimeout(timer); },
  };
}

function createForm(done) {
  const address = h('input', { name: 'address', type: 'email', required: true, placeholder: 'name@example.com', 'aria-label': 'Address' });
  const name = h('input', { name: 'display_name', placeholder: 'Display name (optional)', 'aria-label': 'Display name' });
  const env = h('select', { name: 'environment', 'aria-label': 'Environment' }, h('option', { value: 'live' }, 'live'), h('option', { value: 'test' }, 'test'));
  const policy = h('select', { name: 'send_policy', 'aria-label': 'Send policy' }, policies.map(([v, label]) => h('option', { value: v }, label)));
  const button = h('button', { type: 'submit', class: 'primary' }, 'Create inbox');
  const form = h('form', { class: 'card form-inline', onsubmit: (e) => {
    e.preventDefault();
    run(button, async () => {
      const body = { address: address.value.trim(), environment: env.value, send_policy: policy.value };
      if (name.value.trim()) body.display_name = name.value.trim();
      await request('POST', api('/inboxes'), body);
      toast('Created ' + body.address);
      form.reset();
      done();
    });
  } }, h('h2', {}, 'New inbox'), address, name, env, policy, button);
  return form;
}
