// A thread in sequence order: each message with its HTML (in a sandboxed
// frame), text, extracted text, headers and raw source, its attachments,
// its recipients' delivery status; reply and delete.
import { h, clear, api, enc, get, request, query, has, badge, errorBox, needScope, confirmDialog, run, toast, timeEl, when, fullTime,
  addr, addrs, size, userText, idempotencyKey } from '../lib.js';
import { inboxHeader } from './threads.js';

// frameSandbox must match the frame's own policy (web/frame.go): links may
// open a tab outside the sandbox; nothing may run.
const frameSandbox = 'allow-popups allow-popups-to-escape-sandbox';

export async function render(main, { args, params }) {
  const [inboxId, threadId] = args;
  const base = api('/inboxes/' + enc(inboxId));
  // The head, the thread and its messages are asked for at once.
  const threadRow = has('threads:read') ? get(base + '/threads/' + enc(threadId)) : Promise.resolve(null);
  threadRow.catch(() => {}); // answered below
  const messages = has('messages:read') ? fetchAll() : null;
  if (messages) messages.catch(() => {});
  main.append(await inboxHeader(inboxId, 'threads', null));
  if (!messages) {
    main.append(needScope('messages:read', 'Reading a thread'));
    return { back: '#/inbox/' + enc(inboxId) };
  }
  const title = h('h2', { class: 'thread-subject', dir: 'auto' });
  const list = h('div', { class: 'messages', role: 'list', 'aria-label': 'Messages in sequence order' });
  main.append(title, list);
  try {
    const t = await threadRow;
    if (t) title.textContent = t.subject || '(no subject)';
  } catch (err) {
    clear(list).append(errorBox(err));
    return { back: '#/inbox/' + enc(inboxId) };
  }

  const cards = new Map(); // message id → card
  let last = null; // the message with the highest sequence
  async function fetchAll() {
    const rows = [];
    let cursor = null;
    for (;;) {
      const page = await get(query(base + '/threads/' + enc(threadId) + '/messages', { limit: 100, cursor }));
      rows.push(...page.data);
      if (!page.has_more) return rows;
      cursor = page.next_cursor;
    }
  }

  let msgs;
  try {
    msgs = await messages;
  } catch (err) {
    list.append(errorBox(err));
    return { back: '#/inbox/' + enc(inboxId) };
  }
  if (!title.textContent) title.textContent = (msgs[0] && msgs[0].subject) || '(no subject)';
  const reply = has('messages:send') ? replyBox(base, () => last, refresh, inboxId) : null;
  for (const m of msgs) add(m);
  const focus = cards.get(params.get('m')) || (last && cards.get(last.id));
  if (focus) {
    focus.expand();
    focus.el.scrollIntoView({ block: 'nearest' });
  }
  if (!msgs.length) list.append(h('p', { class: 'muted empty' }, 'This thread has no message left.'));

  if (reply) {
    reply.label();
    main.append(reply.el);
  }
  performance.mark('inboxd:thread-rendered');

  function add(m) {
    const c = card(base, inboxId, m, {
      onReply: reply ? (msg) => reply.to(msg) : null,
      onDeleted: () => { c.el.remove(); cards.delete(m.id); },
    });
    cards.set(m.id, c);
    list.append(c.el);
    if (!last || m.sequence > last.sequence) last = m;
  }

  async function refresh() {
    let fresh;
    try { fresh = await fetchAll(); } catch (err) { toast(err.message, 'error'); return; }
    for (const m of fresh) {
      const c = cards.get(m.id);
      if (c) c.update(m);
      else add(m);
    }
  }

  let timer = null;
  return {
    back: '#/inbox/' + enc(inboxId),
    onEvent(ev) {
      if (!ev.data || ev.data.thread_id !== threadId) return;
      clearTimeout(timer);
      timer = setTimeout(refresh, 100);
    },
    dispose() { clearTimeout(timer); },
  };
}

function badges(m) {
  const out = [];
  if (m.direction === 'outbound') out.push(badge(m.delivery_status || m.state, 'state ' + (m.delivery_status || m.state), 'Delivery status (first To recipient)'));
  if (m.echo) out.push(badge('echo', 'echo', 'An inbound copy of one of this inbox’s own outbound messages.'));
  if (m.simulated) out.push(badge('simulated', 'simulated', 'Stored through test/inbound, not received over SMTP.'));
  if (m.parse_error) out.push(badge('parse error', 'error', m.parse_error));
  if (m.attachments.length) out.push(badge('📎 ' + m.attachments.length, '', m.attachments.length + ' attachment(s)'));
  return out;
}

function card(base, inboxId, m, { onReply, onDeleted }) {
  const msgPath = base + '/messages/' + enc(m.id);
  const badgeBox = h('span', { class: 'badges' }, badges(m));
  const toggle = h('button', { type: 'button', class: 'open msg-toggle', 'aria-expanded': 'false' },
    h('span', { class: 'seq', title: 'Sequence in this thread' }, '#' + m.sequence),
    userText('span', m.direction === 'outbound' ? 'To: ' + addrs(m.to) : addr(m.from), { class: 'who' }),
    badgeBox, h('span', { class: 'when' }, timeEl(m.created_at)));
  const preview = userText('p', m.preview, { class: 'preview' });
  const body = h('div', { class: 'msg-body', hidden: true });
  const el = h('article', { class: 'item message ' + m.direction, role: 'listitem', dataset: { id: m.id, seq: m.sequence } },
    toggle, preview, body);
  let loaded = false;
  let deliveries = null;

  toggle.addEventListener('click', () => (body.hidden ? expand() : collapse()));

  function collapse() {
    body.hidden = true;
    preview.hidden = false;
    toggle.setAttribute('aria-expanded', 'false');
  }

  async function expand() {
    body.hidden = false;
    preview.hidden = true;
    toggle.setAttribute('aria-expanded', 'true');
    if (loaded) return;
    loaded = true;
    body.append(h('dl', { class: 'addresses' },
      h('dt', {}, 'From'), userText('dd', addr(m.from)),
      h('dt', {}, 'To'), userText('dd', addrs(m.to)),
      m.cc.length ? [h('dt', {}, 'Cc'), userText('dd', addrs(m.cc))] : null,
      m.bcc.length ? [h('dt', {}, 'Bcc'), userText('dd', addrs(m.bcc))] : null,
      h('dt', {}, 'Date'), h('dd', {}, fullTime(m.created_at)),
      h('dt', {}, 'Message-ID'), userText('dd', m.rfc_message_id + (m.rfc_message_id_generated ? ' (generated)' : ''), { class: 'mono' }),
      m.parse_error ? [h('dt', {}, 'Parse error'), userText('dd', m.parse_error, { class: 'error-text' })] : null));
    const panels = h('div', { class: 'panels' });
    body.append(panels);
    if (m.direction === 'outbound') {
      deliveries = h('div', { class: 'deliveries' });
      body.append(deliveries);
      loadDeliveries();
    }
    if (m.attachments.length) body.append(attachmentList(msgPath, m.attachments));
    const actions = h('div', { class: 'actions' });
    if (onReply) actions.append(h('button', { type: 'button', onclick: () => onReply(m) }, 'Reply'));
    if (has('messages:delete')) {
      const del = h('button', { type: 'button', class: 'danger quiet', onclick: async () => {
        if (!await confirmDialog('Delete this message?', 'It leaves the thread, the feed and search; its body and raw source are gone.', 'Delete', true)) return;
        run(del, async () => { await request('DELETE', msgPath); toast('Message deleted.'); onDeleted(); });
      } }, 'Delete');
      actions.append(del);
    }
    body.append(actions);
    let b;
    try {
      b = await get(msgPath + '/body');
    } catch (err) {
      panels.append(errorBox(err));
      return;
    }
    panels.append(tabs([
      b.html !== null && ['html', 'HTML', () => htmlPanel(inboxId, m)],
      ['text', 'Text', () => pre(b.text, 'This message has no text part.')],
      ['extracted', 'Extracted', () => pre(b.extracted_text, 'No new text: everything is quoted history or signature.')],
      ['headers', 'Headers', () => rawPanel(msgPath, true)],
      ['raw', 'Raw', () => rawPanel(msgPath, false)],
    ].filter(Boolean)));
  }

  async function loadDeliveries() {
    try {
      const r = await get('/console/inboxes/' + enc(inboxId) + '/messages/' + enc(m.id) + '/deliveries');
      clear(deliveries).append(h('h3', {}, 'Delivery'), h('table', { class: 'table' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Recipient'), h('th', {}, 'Status'), h('th', {}, 'SMTP answer'))),
        h('tbody', {}, r.data.map((d) => h('tr', { dataset: { email: d.email } },
          h('td', {}, userText('span', d.email), ' ', h('span', { class: 'muted' }, d.type)),
          h('td', {}, badge(d.delivery_status, 'state ' + d.delivery_status)),
          h('td', { class: 'mono' }, d.smtp_code === null ? '' : String(d.smtp_code), d.smtp_message ? userText('span', ' ' + d.smtp_message) : null))))));
    } catch (err) {
      clear(deliveries).append(errorBox(err));
    }
  }

  return {
    el,
    expand,
    update(fresh) {
      m = fresh;
      clear(badgeBox).append(badges(fresh));
      if (deliveries) loadDeliveries();
    },
  };
}

// tabs shows one panel at a time; each is built the first time it is shown.
function tabs(defs) {
  const bar = h('div', { class: 'tabs', role: 'tablist' });
  const area = h('div', { class: 'tab-area' });
  const built = new Map();
  function show(name) {
    for (const b of bar.children) b.setAttribute('aria-selected', String(b.dataset.tab === name));
    for (const p of built.values()) p.hidden = true;
    if (!built.has(name)) {
      const panel = h('div', { role: 'tabpanel', dataset: { tab: name } }, defs.find((d) => d[0] === name)[2]());
      built.set(name, panel);
      area.append(panel);
    }
    built.get(name).hidden = false;
  }
  for (const [name, label] of defs) {
    bar.append(h('button', { type: 'button', role: 'tab', class: 'tab', dataset: { tab: name }, onclick: () => show(name) }, label));
  }
  show(defs[0][0]);
  return h('div', { class: 'tabbed' }, bar, area);
}

function pre(text, empty) {
  return text ? userText('pre', text, { class: 'body-text' }) : h('p', { class: 'muted' }, empty);
}

// htmlPanel frames the message's HTML: sandboxed, no script, and remote
// images only after a click, for this message only.
function htmlPanel(inboxId, m) {
  const src = '/console/inboxes/' + enc(inboxId) + '/messages/' + enc(m.id) + '/frame';
  const frame = h('iframe', { class: 'mail', sandbox: frameSandbox, src, title: 'HTML of the message', referrerpolicy: 'no-referrer' });
  const note = h('span', {}, 'Remote images are blocked.');
  const load = h('button', { type: 'button', class: 'quiet load-images', onclick: () => {
    frame.src = src + '?images=remote';
    note.textContent = 'Remote images are loaded for this message.';
    load.remove();
  } }, 'Load remote images');
  return [h('div', { class: 'frame-bar muted small' }, note, ' ', m.original_raw_available ? load : null), frame];
}

// rawPanel shows the raw message, or only its header fields.
function rawPanel(msgPath, headersOnly) {
  if (!has('messages:raw')) return needScope('messages:raw', headersOnly ? 'Showing all headers' : 'The raw source');
  const box = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const limit = 2 << 20;
  fetch(msgPath + '/raw', { credentials: 'same-origin' }).then(async (res) => {
    if (!res.ok) {
      let message = res.statusText;
      try { message = (await res.json()).error.message; } catch { /* keep the status text */ }
      throw new Error(message);
    }
    const raw = await res.text();
    const download = h('a', { href: msgPath + '/raw', download: '', class: 'button' }, 'Download .eml');
    if (headersOnly) {
      const end = raw.search(/\r?\n\r?\n/);
      const lines = (end < 0 ? raw : raw.slice(0, end)).split(/\r?\n/);
      const fields = [];
      for (const line of lines) {
        if (/^[ \t]/.test(line) && fields.length) fields[fields.length - 1][1] += ' ' + line.trim();
        else {
          const i = line.indexOf(':');
          if (i > 0) fields.push([line.slice(0, i), line.slice(i + 1).trim()]);
        }
      }
      clear(box).append(h('table', { class: 'table headers' }, h('tbody', {},
        fields.map(([k, v]) => h('tr', {}, h('th', { class: 'mono' }, k), userText('td', v, { class: 'mono' }))))));
    } else {
      clear(box).append(h('div', { class: 'frame-bar' }, download, raw.length > limit ? h('span', { class: 'muted small' }, ' Showing the first 2 MB of ' + size(raw.length) + '.') : null),
        h('pre', { class: 'raw' }, raw.length > limit ? raw.slice(0, limit) : raw));
    }
  }).catch((err) => clear(box).append(errorBox(err)));
  return box;
}

function attachmentList(msgPath, atts) {
  return h('div', { class: 'attachments' }, h('h3', {}, 'Attachments'), h('ul', {}, atts.map((a) => {
    const name = a.filename || a.id;
    const meta = h('span', { class: 'muted small' }, ' ' + a.content_type + ', ' + size(a.bytes) + (a.disposition === 'inline' ? ', inline' : ''));
    if (a.downloadable) {
      return h('li', {}, h('a', { href: msgPath + '/attachments/' + enc(a.id), download: name, dir: 'auto' }, name), meta);
    }
    return h('li', { class: 'suspicious' }, userText('span', name), meta, ' ',
      badge(a.scan_status === 'suspicious' ? 'suspicious: not downloadable' : a.scan_status + ': not downloadable', 'warn',
        'Executable types and double extensions are not served.'));
  })));
}

// replyBox answers a message of the thread (the last one unless another
// is chosen) with text; a send the inbox's policy holds waits for approval.
function replyBox(base, lastOf, refresh, inboxId) {
  let target = null;
  let key = null; // one Idempotency-Key per draft: a retried click sends once
  const to = h('span', { class: 'muted small' });
  const text = h('textarea', { name: 'text', rows: 4, required: true, placeholder: 'Write a reply…', 'aria-label': 'Reply', dir: 'auto' });
  const send = h('button', { type: 'submit', class: 'primary' }, 'Send reply');
  const status = h('p', { class: 'notice', hidden: true, role: 'status' });
  const el = h('form', { class: 'card reply', onsubmit: (e) => {
    e.preventDefault();
    const parent = target || lastOf();
    if (!parent) return;
    key = key || idempotencyKey();
    run(send, async () => {
      const r = await request('POST', base + '/messages', { reply_to_message_id: parent.id, text: text.value }, { 'Idempotency-Key': key });
      key = null;
      text.value = '';
      target = null;
      label();
      status.hidden = false;
      if (r.result === 'approval_required') {
        clear(status).append('Held for approval by the inbox’s send policy. ', h('a', { href: '#/inbox/' + enc(inboxId) + '/approvals' }, 'See the approval.'));
      } else {
        clear(status).append('Reply queued.');
        refresh();
      }
    });
  } }, h('h3', {}, 'Reply'), to, text, h('div', { class: 'actions' }, send), status);
  function label() {
    const p = target || lastOf();
    to.textContent = p ? 'In reply to #' + p.sequence + ' from ' + addr(p.direction === 'outbound' ? p.to[0] : p.from) + ', ' + when(p.created_at) : '';
  }
  text.addEventListener('focus', label);
  label();
  return {
    el,
    label,
    to(m) {
      target = m;
      label();
      text.focus();
    },
  };
}
