// Approvals: held sends with their exact draft; approve, or reject with a
// reason (approvals:write).
import { h, clear, api, enc, get, request, everything, has, session, badge, errorBox, needScope, run, toast, timeEl, addrs, size, userText } from '../lib.js';
import { inboxHeader, refresher } from './threads.js';

export async function render(main, { args }) {
  const [inboxId] = args;
  if (inboxId) main.append(await inboxHeader(inboxId, 'approvals', null));
  else main.append(h('div', { class: 'view-head' }, h('h1', {}, 'Approvals')));
  if (!has('approvals:read')) {
    main.append(needScope('approvals:read', 'Reading approvals'));
    return { back: inboxId ? '#/inbox/' + enc(inboxId) : '#/' };
  }
  // Approvals are listed per inbox: a key that may use every inbox but
  // not list them has no inboxes to ask, and an empty list would say that
  // nothing waits.
  if (!inboxId && !has('inboxes:read') && !session.current.inbox_ids) {
    main.append(needScope('inboxes:read', 'Finding the inboxes whose approvals to show'));
    return { back: '#/' };
  }
  const pending = h('div', { class: 'list', role: 'list', 'aria-label': 'Pending approvals' });
  const decided = h('div', { class: 'list', role: 'list', 'aria-label': 'Decided approvals' });
  main.append(h('h2', {}, 'Pending'), pending, h('h2', {}, 'Decided'), decided);

  async function load() {
    let inboxes;
    try {
      if (inboxId) inboxes = [{ id: inboxId, address: '' }];
      else if (has('inboxes:read')) inboxes = await everything(api('/inboxes'));
      else inboxes = (session.current.inbox_ids || []).map((id) => ({ id, address: id }));
      const all = [];
      await Promise.all(inboxes.map(async (ib) => {
        for (const ap of await everything(api('/inboxes/' + enc(ib.id) + '/approvals'))) all.push({ ap, ib });
      }));
      all.sort((a, b) => (a.ap.requested_at < b.ap.requested_at ? 1 : -1));
      clear(pending);
      clear(decided);
      for (const x of all) (x.ap.status === 'pending' ? pending : decided).append(approvalCard(x.ap, x.ib, load));
      if (!pending.children.length) pending.append(h('p', { class: 'muted empty' }, 'Nothing waits for a decision.'));
      if (!decided.children.length) decided.append(h('p', { class: 'muted empty' }, 'None yet.'));
    } catch (err) {
      clear(pending).append(errorBox(err));
    }
  }
  await load();
  return refresher(load, (ev) => ev.type.startsWith('approval.') && (!inboxId || (ev.data && ev.data.inbox_id === inboxId)),
    inboxId ? '#/inbox/' + enc(inboxId) : '#/');
}

function approvalCard(ap, ib, reload) {
  const d = ap.draft;
  const path = api('/inboxes/' + enc(ap.inbox_id) + '/approvals/' + enc(ap.id));
  const el = h('article', { class: 'item card approval', role: 'listitem', dataset: { id: ap.id } },
    h('div', { class: 'row-main' }, badge(ap.status, 'state ' + ap.status), userText('strong', d.subject || '(no subject)'),
      ib.address ? h('span', { class: 'muted' }, 'from ' + ib.address) : null, timeEl(ap.requested_at)),
    h('dl', { class: 'addresses' },
      h('dt', {}, 'To'), userText('dd', addrs(d.to)),
      d.cc.length ? [h('dt', {}, 'Cc'), userText('dd', addrs(d.cc))] : null,
      d.bcc.length ? [h('dt', {}, 'Bcc'), userText('dd', addrs(d.bcc))] : null,
      d.reply_to.length ? [h('dt', {}, 'Reply-To'), userText('dd', addrs(d.reply_to))] : null,
      h('dt', {}, 'Subject'), userText('dd', d.subject),
      Object.entries(d.headers).map(([name, value]) => [userText('dt', name), userText('dd', value)])),
    h('details', { open: ap.status === 'pending' }, h('summary', {}, 'The exact draft'),
      d.text !== null ? userText('pre', d.text, { class: 'body-text' }) : null,
      d.html !== null ? [h('p', { class: 'muted small' }, 'HTML part (its source, as it will be sent):'), h('pre', { class: 'raw' }, d.html)] : null,
      d.attachments.length ? h('ul', {}, d.attachments.map((a) => h('li', {}, userText('span', a.filename || '(unnamed)'), ' ', h('span', { class: 'muted small' }, a.content_type + ', ' + size(a.bytes || 0))))) : null));
  if (ap.status !== 'pending') {
    el.append(h('p', { class: 'muted small' }, ap.status + ' ', timeEl(ap.decided_at), ap.decided_by ? ' by ' + ap.decided_by : '',
      ap.reason ? [': ', userText('span', ap.reason)] : null,
      ap.message_id ? [' · ', h('a', { href: '#/inbox/' + enc(ap.inbox_id) + '/thread/' + enc(ap.thread_id) + '?m=' + enc(ap.message_id) }, 'the sent message')] : null));
    return el;
  }
  if (!has('approvals:write')) {
    el.append(h('p', { class: 'muted small' }, 'Deciding needs the scope approvals:write, which this API key lacks.'));
    return el;
  }
  const reason = h('input', { type: 'text', name: 'reason', placeholder: 'Reason (optional, for a rejection)', 'aria-label': 'Reason', dir: 'auto' });
  const approve = h('button', { type: 'button', class: 'primary open', onclick: () => run(approve, async () => {
    await request('POST', path + '/approve');
    toast('Approved: the draft is queued.');
    reload();
  }) }, 'Approve and send');
  const reject = h('button', { type: 'button', class: 'danger', onclick: () => run(reject, async () => {
    await request('POST', path + '/reject', reason.value.trim() ? { reason: reason.value.trim() } : {});
    toast('Rejected: nothing is sent.');
    reload();
  }) }, 'Reject');
  el.append(h('div', { class: 'actions' }, reason, reject, approve));
  return el;
}
