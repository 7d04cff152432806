// API keys: create (the token is shown once), list, revoke. A key sees and
// hands out only keys within its own grant (keys:write).
import { h, clear, api, enc, request, everything, has, session, badge, errorBox, needScope, confirmDialog, secretDialog, run, toast, timeEl, userText } from '../lib.js';

const scopes = ['inboxes:read', 'inboxes:write', 'threads:read', 'messages:read', 'messages:send', 'messages:raw', 'messages:delete',
  'approvals:read', 'approvals:write', 'events:read', 'webhooks:read', 'webhooks:write', 'keys:write', 'test:write'];
const readOnly = ['inboxes:read', 'threads:read', 'messages:read', 'approvals:read', 'events:read'];

export async function render(main) {
  main.append(h('div', { class: 'view-head' }, h('h1', {}, 'API keys')));
  if (!has('keys:write')) {
    main.append(needScope('keys:write', 'Managing API keys'));
    return { back: '#/' };
  }
  const list = h('div', { class: 'list', role: 'list', 'aria-label': 'API keys' });
  const inboxes = has('inboxes:read') ? await everything(api('/inboxes')).catch(() => []) : [];
  main.append(list, createForm(inboxes, load));
  async function load() {
    try {
      const ks = await everything(api('/keys'));
      clear(list);
      for (const k of ks) list.append(keyRow(k, inboxes, load));
    } catch (err) {
      clear(list).append(errorBox(err));
    }
  }
  await load();
  return { back: '#/' };
}

function keyRow(k, inboxes, reload) {
  const names = new Map(inboxes.map((ib) => [ib.id, ib.address]));
  const mine = k.id === session.current.key_id;
  const revoke = h('button', { type: 'button', class: 'danger quiet', onclick: async () => {
    const text = mine ? 'This is the key you are signed in with: revoking it signs you out.' : 'Its token stops working at once, and so do its console sessions.';
    if (!await confirmDialog('Revoke ' + (k.name || k.id) + '?', text, 'Revoke', true)) return;
    run(revoke, async () => { await request('DELETE', api('/keys/' + enc(k.id))); toast('Revoked.'); if (!mine) reload(); });
  } }, 'Revoke');
  return h('div', { class: 'item row', role: 'listitem', dataset: { id: k.id } },
    h('div', { class: 'row-main' }, userText('strong', k.name || '(unnamed)'), h('span', { class: 'mono muted' }, k.token_prefix + '…'),
      mine ? badge('this session', 'on') : null, h('span', { class: 'muted small' }, 'created ', timeEl(k.created_at),
        k.last_used_at ? [', used ', timeEl(k.last_used_at)] : null)),
    h('p', { class: 'small mono' }, k.scopes.join(' ')),
    h('p', { class: 'muted small' }, k.inbox_ids === null ? 'Every inbox' : 'Inboxes: ' + k.inbox_ids.map((id) => names.get(id) || id).join(', ')),
    h('div', { class: 'row-actions' }, revoke));
}

function createForm(inboxes, done) {
  const name = h('input', { name: 'name', required: true, placeholder: 'Name, e.g. ci or agent', 'aria-label': 'Name', dir: 'auto' });
  const mayGrant = scopes.filter(has);
  const boxes = mayGrant.map((s) => h('label', { class: 'check' }, h('input', { type: 'checkbox', value: s, checked: readOnly.includes(s) }), s));
  const restricted = session.current.inbox_ids !== null;
  const inboxBoxes = inboxes.map((ib) => h('label', { class: 'check' }, h('input', { type: 'checkbox', value: ib.id, checked: restricted }), ib.address));
  const button = h('button', { type: 'submit', class: 'primary' }, 'Create key');
  const form = h('form', { class: 'card', onsubmit: (e) => {
    e.preventDefault();
    run(button, async () => {
      const body = { name: name.value.trim(), scopes: boxes.map((b) => b.firstChild).filter((c) => c.checked).map((c) => c.value) };
      const chosen = inboxBoxes.map((b) => b.firstChild).filter((c) => c.checked).map((c) => c.value);
      if (chosen.length || restricted) body.inbox_ids = chosen;
      else body.inbox_ids = null;
      const k = await request('POST', api('/keys'), body);
      secretDialog('API key ' + k.name, 'Shown this once: copy the token now. Only a hash of it is kept.', k.token);
      form.reset();
      done();
    });
  } }, h('h2', {}, 'New API key'), name,
  h('fieldset', {}, h('legend', {}, 'Scopes (only those this key holds)'), h('div', { class: 'checks' }, boxes)),
  inboxes.length ? h('fieldset', {}, h('legend', {}, restricted ? 'Inboxes' : 'Inboxes (none checked: every inbox)'), h('div', { class: 'checks' }, inboxBoxes)) : null,
  h('div', { class: 'actions' }, button));
  return form;
}
