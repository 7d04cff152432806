// Sign-in: an API key is exchanged for a session cookie; the key is not
// kept by the page.
import { h, clear, request } from '../lib.js';

export function render(main, { message, signedIn }) {
  const error = h('p', { class: 'notice error', role: 'alert', hidden: true });
  const field = h('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'off', required: true,
    placeholder: 'inboxd_…', spellcheck: 'false', 'aria-describedby': 'token-help' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h('form', { class: 'signin card', onsubmit: async (e) => {
    e.preventDefault();
    button.disabled = true;
    error.hidden = true;
    try {
      const s = await request('POST', '/console/session', { token: field.value });
      field.value = '';
      signedIn(s);
    } catch (err) {
      error.textContent = err.message;
      error.hidden = false;
      field.select();
    } finally {
      button.disabled = false;
    }
  } },
  h('h1', {}, 'inboxd'),
  message ? h('p', { class: 'notice' }, message) : null,
  h('label', { for: 'token' }, 'API key'),
  field,
  h('p', { id: 'token-help', class: 'muted small' },
    'Paste an API key. The admin key was printed at the first start and written to admin.key in the data directory. ',
    'The console shows and does only what the key’s scopes and inboxes allow.'),
  error,
  button);
  clear(main).append(form);
  field.focus();
}
