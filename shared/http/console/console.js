// The Boomerang console. It calls the public API only, on this origin, with the API key
// the user signs in with (kept in this tab's sessionStorage and sent as a bearer token).
// Whatever the API returns is put on the page as text, never parsed as HTML.

const KEY_STORE = 'boomerang.apiKey';
const PAGE_SIZE = 25;
const STATUSES = ['held', 'scheduled', 'delivering', 'succeeded', 'failed', 'canceled'];
const LIVE_EVERY_MS = 10000;
const TASK_EVERY_MS = 1500;
const BULK_EVERY_MS = 2000;
const BULK_ACTIONS = ['retry', 'cancel', 'release'];

const main = document.getElementById('main');
const notice = document.getElementById('notice');
const nav = document.getElementById('nav');
const signOutButton = document.getElementById('sign-out');
const overview = document.getElementById('overview');
const countsBox = document.getElementById('counts');
const live = document.getElementById('live');
const destinationsBox = document.getElementById('destinations');

let statsTimer = null;
let viewTimer = null;
// Bumped on each navigation: a view whose data arrives after the user moved on is dropped.
let view = 0;
// The cursors of the pages before this one, for "Previous"; '' is the first page.
let earlierPages = [];

// ---------------------------------------------------------------- DOM helpers

/** An element with attributes (`on…` ones are listeners) and children (text or nodes). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  return fill(el, attrs, children);
}

/** The same, for SVG. */
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  return fill(el, attrs, children);
}

function fill(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name === 'className' ? 'class' : name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

function badge(status) {
  return h('span', { class: `badge ${status}` }, status);
}

function dl(pairs) {
  return h('dl', {}, pairs.filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// ---------------------------------------------------------------- formatting

function when(iso) {
  if (!iso) return '—';
  return new Date(iso).toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric',
    hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

function span(ms) {
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(ms)} ms`;
  if (a < 60000) return `${(ms / 1000).toFixed(a < 10000 ? 1 : 0)} s`;
  if (a < 3600000) return `${(ms / 60000).toFixed(1)} min`;
  if (a < 86400000) return `${(ms / 3600000).toFixed(1)} h`;
  return `${(ms / 86400000).toFixed(1)} d`;
}

// ---------------------------------------------------------------- the API

class ApiError extends Error {
  constructor(status, problem) {
    super(problem && problem.detail ? problem.detail : `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

async function api(method, path, json) {
  const key = sessionStorage.getItem(KEY_STORE) || '';
  const headers = { authorization: `Bearer ${key}` };
  if (json !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    body: json === undefined ? undefined : JSON.stringify(json),
    cache: 'no-store',
  });
  const body = response.status === 204 ? null : await response.json().catch(() => null);
  if (response.status === 401) {
    signOut('That API key was refused: sign in again.');
    throw new ApiError(401, body);
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

function say(message, kind = 'error') {
  notice.className = kind;
  notice.textContent = message;
}

function hush() {
  notice.className = '';
  notice.textContent = '';
}

/** What to tell the user about a failed call: the problem's status and detail. */
function refusal(error) {
  if (error instanceof ApiError) return `${error.status}: ${error.message}`;
  return `the server could not be reached (${error.message})`;
}

// ---------------------------------------------------------------- signing in

function showSignIn(message) {
  stopTimers();
  nav.hidden = true;
  signOutButton.hidden = true;
  overview.hidden = true;
  const input = h('input', {
    id: 'api-key', name: 'api-key', type: 'password', autocomplete: 'off',
    spellcheck: 'false', required: true,
  });
  const form = h('form', { class: 'sign-in', onsubmit: (event) => signIn(event, input) },
    h('h2', {}, 'Sign in'),
    h('p', {}, 'Paste an API key. It is kept in this tab only, and sent to this server alone.'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  main.replaceChildren(form);
  if (message) say(message);
  input.focus();
}

async function signIn(event, input) {
  event.preventDefault();
  sessionStorage.setItem(KEY_STORE, input.value.trim());
  try {
    await api('GET', '/v1/tasks?limit=1');
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) say(`Cannot sign in: ${refusal(error)}`);
    return;
  }
  hush();
  if (!location.hash || location.hash === '#/') location.hash = '#/tasks';
  else route();
}

function signOut(message) {
  sessionStorage.removeItem(KEY_STORE);
  history.replaceState(null, '', '#/');
  showSignIn(message);
}

signOutButton.addEventListener('click', () => signOut());

// ---------------------------------------------------------------- routing

function stopTimers() {
  clearInterval(statsTimer);
  statsTimer = null;
  clearTimeout(viewTimer);
  viewTimer = null;
}

function route() {
  view += 1;
  clearTimeout(viewTimer);
  if (!sessionStorage.getItem(KEY_STORE)) return showSignIn();
  nav.hidden = false;
  signOutButton.hidden = false;
  overview.hidden = false;
  if (!statsTimer) {
    refreshStats();
    statsTimer = setInterval(refreshStats, LIVE_EVERY_MS);
  }
  const [path, query] = location.hash.slice(1).split('?');
  const params = new URLSearchParams(query || '');
  const here = `#${path}${params.get('status') ? `?status=${params.get('status')}` : ''}`;
  for (const link of nav.querySelectorAll('a')) {
    if (link.getAttribute('href') === here) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const task = path.match(/^\/tasks\/([0-9A-Za-z]{26})$/);
  if (task) return showTask(task[1], true);
  if (path === '/flows') return showFlows();
  if (path === '/breakers') return showBreakers();
  if (path === '/schedules') return showSchedules();
  if (path === '/bulk') return showBulk();
  if (path === '/order-keys') return showOrderKeys(params);
  return showList(params);
}

window.addEventListener('hashchange', () => {
  hush();
  route();
  main.focus();
});

// ---------------------------------------------------------------- actions

/** The buttons for what the task's state allows. `done` runs after each. */
function actionsFor(task, done) {
  const buttons = [];
  const act = (label, method, path) => buttons.push(h('button', {
    type: 'button',
    class: `action ${label.toLowerCase()}`,
    'aria-label': `${label} task ${task.id}`,
    onclick: () => act1(label, task, method, path, done),
  }, label));
  if (task.status === 'held') act('Release', 'POST', `/v1/tasks/${task.id}/release`);
  if (task.status === 'scheduled' || task.status === 'held') act('Cancel', 'DELETE', `/v1/tasks/${task.id}`);
  if (task.status === 'failed') act('Retry', 'POST', `/v1/tasks/${task.id}/retry`);
  return buttons;
}

/**
 * Asks to confirm `label` on `subject` ("task 01…", "flow partner-api"), makes the call
 * and says how it went; `done` runs after it either way (told whether it was done).
 * `detail` follows the question.
 */
async function confirmedCall(label, subject, method, path, done, detail = '', json = undefined) {
  if (!confirm(`${label} ${subject}?${detail}`)) return;
  let ok = false;
  try {
    await api(method, path, json);
    ok = true;
    say(`${label}: done (${subject}).`, 'ok');
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return;
    say(`${label} refused: ${refusal(error)}`);
  }
  done(ok);
}

async function act1(label, task, method, path, done) {
  const after = () => { refreshStats(); done(); };
  await confirmedCall(label, `task ${task.id}`, method, path, after, `\n${task.url}`);
}

async function retryAll(tasks, done) {
  if (!confirm(`Retry all ${tasks.length} failed tasks shown?`)) return;
  let retried = 0;
  const refused = [];
  for (const task of tasks) {
    try {
      await api('POST', `/v1/tasks/${task.id}/retry`);
      retried += 1;
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return;
      refused.push(`${task.id}: ${refusal(error)}`);
    }
  }
  if (refused.length) say(`Retried ${retried} of ${tasks.length}. Refused: ${refused.join('; ')}`);
  else say(`Retried ${retried} of ${tasks.length}.`, 'ok');
  refreshStats();
  done();
}

// ---------------------------------------------------------------- the task list

function listHash(status, key, cursor) {
  const q = new URLSearchParams();
  if (status) q.set('status', status);
  if (key) q.set('key', key);
  if (cursor) q.set('cursor', cursor);
  const text = q.toString();
  return `#/tasks${text ? `?${text}` : ''}`;
}

function filters(status, key) {
  const statusSelect = h('select', { id: 'f-status', name: 'status' },
    h('option', { value: '' }, 'any'),
    STATUSES.map((st) => h('option', { value: st, selected: st === status }, st)));
  const keyInput = h('input', { id: 'f-key', name: 'key', value: key, placeholder: 'order-42', maxlength: 255 });
  return h('form', {
    class: 'filters', role: 'search',
    onsubmit: (event) => {
      event.preventDefault();
      earlierPages = [];
      location.hash = listHash(statusSelect.value, keyInput.value.trim(), '');
    },
  },
  h('div', {}, h('label', { for: 'f-status' }, 'Status'), statusSelect),
  h('div', {}, h('label', { for: 'f-key' }, 'Business key'), keyInput),
  h('button', { type: 'submit' }, 'Show'));
}

async function showList(params) {
  const status = params.get('status') || '';
  const key = params.get('key') || '';
  const cursor = params.get('cursor') || '';
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (status) query.set('status', status);
  if (key) query.set('key', key);
  if (cursor) query.set('cursor', cursor);
  const title = h('h2', {}, status ? `${status[0].toUpperCase()}${status.slice(1)} tasks` : 'Tasks');
  const mine = view;
  let page;
  try {
    page = await api('GET', `/v1/tasks?${query}`);
    if (mine !== view) return;
  } catch (error) {
    if (mine !== view) return;
    if (!(error instanceof ApiError && error.status === 401)) {
      main.replaceChildren(title, filters(status, key), h('p', { class: 'empty' }, `Cannot list tasks: ${refusal(error)}`));
    }
    return;
  }
  const reload = () => showList(params);
  const rows = page.tasks.map((task) => h('tr', { 'data-task': task.id },
    h('td', {}, h('a', { href: `#/tasks/${task.id}`, class: 'mono', title: task.id }, task.id.slice(-8))),
    h('td', {}, badge(task.status)),
    h('td', { class: 'url' }, h('span', { class: 'mono' }, `${task.method} ${task.url}`)),
    h('td', { class: 'wide' }, task.key || ''),
    h('td', { class: 'wide' }, String(task.attempt)),
    h('td', { class: 'wide' }, task.next_attempt_at ? when(task.next_attempt_at) : (task.last_error || '')),
    h('td', { class: 'wide' }, when(task.created_at)),
    h('td', {}, actionsFor(task, reload))));
  const table = h('div', { class: 'scroll' }, h('table', {},
    h('caption', {}, 'Newest first'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Task'), h('th', { scope: 'col' }, 'Status'),
      h('th', { scope: 'col' }, 'Request'), h('th', { scope: 'col', class: 'wide' }, 'Key'),
      h('th', { scope: 'col', class: 'wide' }, 'Attempt'),
      h('th', { scope: 'col', class: 'wide' }, 'Next attempt / last error'),
      h('th', { scope: 'col', class: 'wide' }, 'Registered'), h('th', { scope: 'col' }, 'Actions'))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 8, class: 'empty' }, 'No tasks.')))));
  const toolbar = h('div', { class: 'toolbar' });
  if (cursor) {
    toolbar.append(h('button', {
      type: 'button',
      onclick: () => { location.hash = listHash(status, key, earlierPages.pop() || ''); },
    }, '← Previous'));
  }
  if (page.next_cursor) {
    toolbar.append(h('button', {
      type: 'button',
      onclick: () => { earlierPages.push(cursor); location.hash = listHash(status, key, page.next_cursor); },
    }, 'Next →'));
  }
  const failed = page.tasks.filter((t) => t.status === 'failed');
  if (status === 'failed' && failed.length) {
    toolbar.append(h('button', { type: 'button', class: 'primary', onclick: () => retryAll(failed, reload) },
      `Retry all shown (${failed.length})`));
  }
  if (status === 'failed') {
    toolbar.append(h('a', { href: '#/bulk' }, 'Retry by filter, beyond this page (bulk job)'));
  }
  main.replaceChildren(title, filters(status, key), table, toolbar);
}

// ---------------------------------------------------------------- flows

/** A flow's path in the API: its key is one path segment, whatever it holds. */
function flowPath(key, action) {
  return `/v1/flows/${encodeURIComponent(key)}${action ? `/${action}` : ''}`;
}

async function flowAction(action, key, done) {
  const label = action === 'pause' ? 'Pause' : 'Resume';
  await confirmedCall(label, `flow ${key}`, 'POST', flowPath(key, action), done);
}

/** The flows that are paused or busy, with what waits in them; pause or resume one. */
async function showFlows() {
  const title = h('h2', {}, 'Flows');
  const mine = view;
  let answer;
  try {
    answer = await api('GET', '/v1/flows');
    if (mine !== view) return;
  } catch (error) {
    if (mine !== view) return;
    if (!(error instanceof ApiError && error.status === 401)) {
      main.replaceChildren(title, h('p', { class: 'empty' }, `Cannot list flows: ${refusal(error)}`));
    }
    return;
  }
  const reload = () => { if (mine === view) showFlows(); };
  const rows = answer.flows.map((flow) => h('tr', { 'data-flow': flow.key },
    h('td', { class: 'mono' }, flow.key),
    h('td', {}, h('span', { class: `badge ${flow.paused ? 'held' : 'succeeded'}` }, flow.paused ? 'paused' : 'running')),
    h('td', {}, String(flow.waiting)),
    h('td', {}, String(flow.in_flight)),
    h('td', {}, h('button', {
      type: 'button',
      class: `action ${flow.paused ? 'resume' : 'pause'}`,
      'aria-label': `${flow.paused ? 'Resume' : 'Pause'} flow ${flow.key}`,
      onclick: () => flowAction(flow.paused ? 'resume' : 'pause', flow.key, reload),
    }, flow.paused ? 'Resume' : 'Pause'))));
  const table = h('div', { class: 'scroll' }, h('table', {},
    h('caption', {}, 'Paused flows, and those with tasks waiting or calls in flight'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Key'), h('th', { scope: 'col' }, 'State'),
      h('th', { scope: 'col' }, 'Waiting'), h('th', { scope: 'col' }, 'In flight'),
      h('th', { scope: 'col' }, 'Actions'))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 5, class: 'empty' }, 'No flow is paused or busy.')))));
  const keyInput = h('input', { id: 'flow-key', name: 'key', placeholder: 'partner-api', maxlength: 255, required: true });
  const pauseForm = h('form', {
    class: 'filters',
    onsubmit: (event) => {
      event.preventDefault();
      const key = keyInput.value.trim();
      if (key) flowAction('pause', key, reload);
    },
  },
  h('div', {}, h('label', { for: 'flow-key' }, 'Flow key'), keyInput),
  h('button', { type: 'submit' }, 'Pause flow'));
  main.replaceChildren(title, table, h('h3', {}, 'Pause any flow'), pauseForm);
  // The figures move on their own: look again while this view is shown.
  viewTimer = setTimeout(reload, LIVE_EVERY_MS);
}

// ---------------------------------------------------------------- breakers

async function breakerAction(open, destination, done) {
  const label = open ? 'Open' : 'Close';
  const path = `/v1/breakers/${open ? 'open' : 'close'}`;
  await confirmedCall(label, `breaker ${destination}`, 'POST', path, done, '', { destination });
}

/** The destinations whose circuit breaker is open, and when they are probed next; open
 * or close one by hand. */
async function showBreakers() {
  const title = h('h2', {}, 'Circuit breakers');
  const mine = view;
  let answer;
  try {
    answer = await api('GET', '/v1/breakers');
    if (mine !== view) return;
  } catch (error) {
    if (mine !== view) return;
    if (!(error instanceof ApiError && error.status === 401)) {
      main.replaceChildren(title, h('p', { class: 'empty' }, `Cannot list breakers: ${refusal(error)}`));
    }
    return;
  }
  const reload = () => { if (mine === view) showBreakers(); };
  const s = answer.settings;
  const rule = h('p', {}, `A destination opens after ${s.failures} failed calls in a row spanning ${s.span}; `
    + `its deliveries then wait, using up no attempts, while one probe at a time tests it `
    + `(after ${s.first_probe}, doubling to ${s.max_probe}).`);
  const rows = answer.open.map((b) => h('tr', { 'data-breaker': b.destination },
    h('td', { class: 'mono' }, b.destination),
    h('td', {}, h('span', { class: 'badge failed' }, b.by_hand ? 'open by hand' : 'open')),
    h('td', {}, when(b.opened_at)),
    h('td', {}, b.by_hand ? 'none until closed' : when(b.next_probe_at)),
    h('td', {}, String(b.probes_failed)),
    h('td', {}, h('button', {
      type: 'button',
      class: 'action resume',
      'aria-label': `Close breaker ${b.destination}`,
      onclick: () => breakerAction(false, b.destination, reload),
    }, 'Close'))));
  const table = h('div', { class: 'scroll' }, h('table', {},
    h('caption', {}, 'Destinations whose breaker is open'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Destination'), h('th', { scope: 'col' }, 'State'),
      h('th', { scope: 'col' }, 'Opened'), h('th', { scope: 'col' }, 'Next probe'),
      h('th', { scope: 'col' }, 'Probes failed'), h('th', { scope: 'col' }, 'Actions'))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No breaker is open.')))));
  const urlInput = h('input', { id: 'breaker-url', name: 'destination', placeholder: 'https://hooks.example.com', maxlength: 2048, required: true });
  const openForm = h('form', {
    class: 'filters',
    onsubmit: (event) => {
      event.preventDefault();
      const destination = urlInput.value.trim();
      if (destination) breakerAction(true, destination, reload);
    },
  },
  h('div', {}, h('label', { for: 'breaker-url' }, 'Destination URL'), urlInput),
  h('button', { type: 'submit' }, 'Open breaker'));
  main.replaceChildren(title, rule, table, h('h3', {}, 'Open a breaker by hand'), openForm);
  // Look again while this view is shown, but never under an operator typing a URL.
  const again = () => { if (urlInput.value) viewTimer = setTimeout(again, LIVE_EVERY_MS); else reload(); };
  viewTimer = setTimeout(again, LIVE_EVERY_MS);
}

// ---------------------------------------------------------------- schedules

async function scheduleAction(method, id, verb, done) {
  const label = { pause: 'Pause', resume: 'Resume', '': 'Delete' }[verb];
  const path = `/v1/schedules/${id}${verb ? `/${verb}` : ''}`;
  await confirmedCall(label, `schedule ${id}`, method, path, done);
}

/** The tenant's schedules: when each fires next; pause, resume or delete one. */
async function showSchedules() {
  const title = h('h2', {}, 'Schedules');
  const mine = view;
  let answer;
  try {
    answer = await api('GET', '/v1/schedules?limit=100');
    if (mine !== view) return;
  } catch (error) {
    if (mine !== view) return;
    if (!(error instanceof ApiError && error.status === 401)) {
      main.replaceChildren(title, h('p', { class: 'empty' }, `Cannot list schedules: ${refusal(error)}`));
    }
    return;
  }
  const reload = () => { if (mine === view) showSchedules(); };
  const rows = answer.schedules.map((sch) => {
    const recurrence = sch.cron ? `${sch.cron} (${sch.timezone})` : `every ${span(sch.every_ms)}`;
    const paused = sch.state === 'paused';
    return h('tr', { 'data-schedule': sch.id },
      h('td', { class: 'mono' }, sch.id),
      h('td', {}, h('span', { class: `badge ${paused ? 'held' : 'succeeded'}` }, sch.state)),
      h('td', { class: 'mono' }, recurrence),
      h('td', {}, sch.next_at ? when(sch.next_at) : '—'),
      h('td', { class: 'mono' }, sch.url),
      h('td', {},
        h('button', {
          type: 'button',
          class: `action ${paused ? 'resume' : 'pause'}`,
          'aria-label': `${paused ? 'Resume' : 'Pause'} schedule ${sch.id}`,
          onclick: () => scheduleAction('POST', sch.id, paused ? 'resume' : 'pause', reload),
        }, paused ? 'Resume' : 'Pause'),
        h('button', {
          type: 'button',
          class: 'action cancel',
          'aria-label': `Delete schedule ${sch.id}`,
          onclick: () => scheduleAction('DELETE', sch.id, '', reload),
        }, 'Delete')));
  });
  const table = h('div', { class: 'scroll' }, h('table', {},
    h('caption', {}, 'Recurring callbacks; each occurrence is a task in the list'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Id'), h('th', { scope: 'col' }, 'State'),
      h('th', { scope: 'col' }, 'When'), h('th', { scope: 'col' }, 'Next'),
      h('th', { scope: 'col' }, 'URL'), h('th', { scope: 'col' }, 'Actions'))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No schedule yet (POST /v1/schedules, or boomerang schedules create).')))));
  main.replaceChildren(title, table);
  viewTimer = setTimeout(reload, LIVE_EVERY_MS);
}

// ---------------------------------------------------------------- bulk jobs

/** A job's filter, as a line of text: `url_prefix=…, metadata.tier=gold`. */
function filterText(filter) {
  const parts = [];
  for (const [name, value] of Object.entries(filter || {})) {
    if (Array.isArray(value)) parts.push(`${name}=${value.join('|')}`);
    else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) parts.push(`${name}.${k}=${v}`);
    } else parts.push(`${name}=${value}`);
  }
  return parts.length ? parts.join(', ') : 'every task the action takes';
}

function jobsTable(jobs) {
  const rows = jobs.map((job) => h('tr', { 'data-job': job.id, 'data-state': job.state },
    h('td', {}, h('span', { class: 'mono', title: job.id }, job.id)),
    h('td', {}, job.action),
    h('td', {}, h('span', { class: `badge ${job.state === 'running' ? 'delivering' : 'succeeded'}` }, job.state)),
    h('td', { class: 'num' }, String(job.progress.read)),
    h('td', { class: 'num' }, String(job.progress.matched)),
    h('td', { class: 'num' }, String(job.progress.done)),
    h('td', { class: 'num' }, String(job.progress.skipped)),
    h('td', { class: 'wide' }, when(job.created_at)),
    h('td', { class: 'wide url' }, h('span', { class: 'mono' }, filterText(job.filter)))));
  return h('div', { class: 'scroll' }, h('table', { class: 'jobs' },
    h('caption', {}, 'Bulk jobs, newest first'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Job'), h('th', { scope: 'col' }, 'Action'),
      h('th', { scope: 'col' }, 'State'), h('th', { scope: 'col', class: 'num' }, 'Read'),
      h('th', { scope: 'col', class: 'num' }, 'Matched'), h('th', { scope: 'col', class: 'num' }, 'Done'),
      h('th', { scope: 'col', class: 'num' }, 'Skipped'), h('th', { scope: 'col', class: 'wide' }, 'Created'),
      h('th', { scope: 'col', class: 'wide' }, 'Filter'))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 9, class: 'empty' }, 'No bulk job yet.')))));
}

/**
 * The tenant's bulk jobs, followed while one runs; and a form to preview or start a bulk
 * retry, cancel or release over the tasks a filter takes. Only the table is redrawn as
 * the jobs move on, never the form under an operator's hands.
 */
async function showBulk() {
  const title = h('h2', {}, 'Bulk jobs');
  const mine = view;
  let answer;
  try {
    answer = await api('GET', '/v1/bulk-jobs');
    if (mine !== view) return;
  } catch (error) {
    if (mine !== view) return;
    if (!(error instanceof ApiError && error.status === 401)) {
      main.replaceChildren(title, h('p', { class: 'empty' }, `Cannot list bulk jobs: ${refusal(error)}`));
    }
    return;
  }
  const jobsBox = h('div', { id: 'bulk-jobs' });
  let wasRunning = false;
  const draw = (jobs) => {
    jobsBox.replaceChildren(jobsTable(jobs));
    const running = jobs.some((job) => job.state === 'running');
    // A job that just finished has moved tasks between states: count them again.
    if (wasRunning && !running) refreshStats();
    wasRunning = running;
    // Follow the jobs closely while one runs; otherwise look again now and then (a job
    // may be started elsewhere, by the CLI or the API).
    clearTimeout(viewTimer);
    viewTimer = setTimeout(refresh, running ? BULK_EVERY_MS : LIVE_EVERY_MS);
  };
  async function refresh() {
    if (mine !== view) return;
    let again;
    try {
      again = await api('GET', '/v1/bulk-jobs');
    } catch (error) {
      if (mine !== view || (error instanceof ApiError && error.status === 401)) return;
      say(`Cannot list bulk jobs: ${refusal(error)}`);
      clearTimeout(viewTimer);
      viewTimer = setTimeout(refresh, LIVE_EVERY_MS);
      return;
    }
    if (mine === view) draw(again.jobs);
  }

  const actionSelect = h('select', { id: 'bulk-action', name: 'action' },
    BULK_ACTIONS.map((a) => h('option', { value: a }, a)));
  const field = (id, label, attrs) => {
    const input = h('input', { id, name: id.replace('bulk-', ''), autocomplete: 'off', spellcheck: 'false', ...attrs });
    return [input, h('div', {}, h('label', { for: id }, label), input)];
  };
  const [prefixInput, prefixField] = field('bulk-url-prefix', 'URL prefix', { placeholder: 'https://hooks.example.com/orders/', maxlength: 2048 });
  const [destinationInput, destinationField] = field('bulk-destination', 'Destination', { placeholder: 'https://hooks.example.com', maxlength: 2048 });
  const [metadataInput, metadataField] = field('bulk-metadata', 'Metadata NAME=VALUE', { placeholder: 'tier=gold' });
  const [statusInput, statusField] = field('bulk-last-status', 'Last status code', { placeholder: '500', inputmode: 'numeric', maxlength: 3, size: 5 });
  const previewBox = h('div', { id: 'bulk-preview', class: 'preview', 'aria-live': 'polite' });

  /** The request's filter from the form, or a sentence saying what to fix. */
  const readFilter = () => {
    const filter = {};
    const prefix = prefixInput.value.trim();
    const destination = destinationInput.value.trim();
    const metadata = metadataInput.value.trim();
    const code = statusInput.value.trim();
    if (prefix) filter.url_prefix = prefix;
    if (destination) filter.destination = destination;
    if (metadata) {
      const at = metadata.indexOf('=');
      if (at < 1) return { problem: 'Metadata: write NAME=VALUE (tier=gold).' };
      filter.metadata = { [metadata.slice(0, at).trim()]: metadata.slice(at + 1).trim() };
    }
    if (code) {
      if (!/^\d{3}$/.test(code)) return { problem: 'Last status code: write an HTTP status code (500).' };
      filter.last_status = Number(code);
    }
    return { filter };
  };

  // What the last preview found, for the confirmation of the same request.
  let previewed = null;
  const preview = async () => {
    const { filter, problem } = readFilter();
    if (problem) { say(problem); return; }
    const action = actionSelect.value;
    const request = { action, filter, dry_run: true };
    let found;
    try {
      found = await api('POST', '/v1/tasks/bulk', request);
      if (mine !== view) return;
    } catch (error) {
      if (mine !== view || (error instanceof ApiError && error.status === 401)) return;
      previewBox.replaceChildren();
      say(`Preview refused: ${refusal(error)}`);
      return;
    }
    hush();
    previewed = { key: JSON.stringify({ action, filter }), count: found.count, complete: found.complete };
    const count = `${found.complete ? '' : 'at least '}${found.count}`;
    const parts = [
      h('p', { class: 'count' }, `${action[0].toUpperCase()}${action.slice(1)} would take `,
        h('strong', { class: 'preview-count' }, count), ` task${found.count === 1 ? '' : 's'} now.`,
        found.complete ? '' : ' (The count stopped at the preview\'s time limit.)'),
      found.sample.length ? [
        h('p', {}, found.sample.length < found.count ? `The first ${found.sample.length}:` : 'They are:'),
        h('ul', { class: 'sample' }, found.sample.map((task) => h('li', { 'data-task': task.id },
          h('a', { href: `#/tasks/${task.id}`, class: 'mono' }, task.id), ' ',
          badge(task.status), ' ', h('span', { class: 'mono' }, task.url)))),
      ] : [],
    ];
    previewBox.replaceChildren(...parts.flat());
  };

  const start = async () => {
    const { filter, problem } = readFilter();
    if (problem) { say(problem); return; }
    const action = actionSelect.value;
    const key = JSON.stringify({ action, filter });
    const count = previewed && previewed.key === key
      ? `\nThe preview found ${previewed.complete ? '' : 'at least '}${previewed.count} tasks.`
      : '\nNot previewed: Preview first to see how many tasks it takes.';
    const subject = `a bulk ${action} of the tasks that match ${filterText(filter)}`;
    const started = (ok) => {
      if (mine !== view) return;
      // The preview told of the tasks before the job: once it has started, it no longer does.
      if (ok) { previewBox.replaceChildren(); previewed = null; }
      refreshStats();
      refresh();
    };
    await confirmedCall('Start', subject, 'POST', '/v1/tasks/bulk', started, count, { action, filter });
  };

  const form = h('form', {
    class: 'filters bulk',
    onsubmit: (event) => { event.preventDefault(); preview(); },
    // A preview says what this form asked; once it is changed, it no longer does.
    oninput: () => { previewBox.replaceChildren(); previewed = null; },
  },
  h('div', {}, h('label', { for: 'bulk-action' }, 'Action'), actionSelect),
  prefixField, destinationField, metadataField, statusField,
  h('button', { type: 'submit' }, 'Preview'),
  h('button', { type: 'button', class: 'primary', onclick: start }, 'Start'));
  const help = h('p', { class: 'empty' }, 'Retry failed tasks, cancel scheduled or held ones, or release held ones: '
    + 'every task that matches all the filters given. Preview to count them first; a job then goes through '
    + 'them at up to 100 a second.');
  main.replaceChildren(title, jobsBox, h('h3', {}, 'Start a bulk action'), help, form, previewBox);
  draw(answer.jobs);
}

// ---------------------------------------------------------------- order keys

function orderKeysHash(after) {
  return `#/order-keys${after ? `?${new URLSearchParams({ after })}` : ''}`;
}

/** The tenant's order keys, a page at a time: whose turn it is in each, and how many
 * tasks hold a place; a key whose head failed for good is blocked until that task is
 * retried or canceled. */
async function showOrderKeys(params) {
  const after = params.get('after') || '';
  if (!after) earlierPages = [];
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (after) query.set('after', after);
  const title = h('h2', {}, 'Order keys');
  const mine = view;
  let page;
  try {
    page = await api('GET', `/v1/order-keys?${query}`);
    if (mine !== view) return;
  } catch (error) {
    if (mine !== view) return;
    if (!(error instanceof ApiError && error.status === 401)) {
      main.replaceChildren(title, h('p', { class: 'empty' }, `Cannot list order keys: ${refusal(error)}`));
    }
    return;
  }
  const reload = () => { if (mine === view) showOrderKeys(params); };
  const rows = page.keys.map((k) => {
    const head = k.head;
    return h('tr', { 'data-order-key': k.key, 'data-blocked': head ? String(head.blocked) : null },
      h('td', { class: 'mono' }, k.key),
      h('td', { class: 'num' }, String(k.backlog)),
      h('td', {}, head ? h('a', { href: `#/tasks/${head.task_id}`, class: 'mono', title: head.task_id }, head.task_id.slice(-8)) : '—'),
      h('td', { class: 'num' }, head ? String(head.place) : '—'),
      h('td', {}, head ? badge(head.status) : '—'),
      h('td', {}, head && head.blocked
        ? h('span', { class: 'badge failed', title: 'Its head failed for good: retry or cancel that task to go on' }, 'blocked')
        : 'no'),
      h('td', { class: 'wide' }, head ? when(head.since) : '—'));
  });
  const table = h('div', { class: 'scroll' }, h('table', { class: 'order-keys' },
    h('caption', {}, 'Tasks with the same order key are delivered one at a time, in the order they were registered'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Key'), h('th', { scope: 'col', class: 'num' }, 'Backlog'),
      h('th', { scope: 'col' }, 'Head task'), h('th', { scope: 'col', class: 'num' }, 'Place'),
      h('th', { scope: 'col' }, 'Head status'), h('th', { scope: 'col' }, 'Blocked'),
      h('th', { scope: 'col', class: 'wide' }, 'Head since'))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 7, class: 'empty' }, 'No order key yet (register a task with order_key).')))));
  const toolbar = h('div', { class: 'toolbar' });
  if (after) {
    toolbar.append(h('button', {
      type: 'button',
      onclick: () => { location.hash = orderKeysHash(earlierPages.pop() || ''); },
    }, '← Previous'));
  }
  if (page.next_cursor) {
    toolbar.append(h('button', {
      type: 'button',
      onclick: () => { earlierPages.push(after); location.hash = orderKeysHash(page.next_cursor); },
    }, 'Next →'));
  }
  main.replaceChildren(title, table, toolbar);
  // Heads move on as their tasks are delivered: look again while this view is shown.
  viewTimer = setTimeout(reload, LIVE_EVERY_MS);
}

// ---------------------------------------------------------------- one task

async function showTask(id, first) {
  clearTimeout(viewTimer);
  const mine = view;
  let task;
  try {
    task = await api('GET', `/v1/tasks/${id}`);
    if (mine !== view) return;
  } catch (error) {
    if (mine !== view) return;
    if (!(error instanceof ApiError && error.status === 401)) {
      main.replaceChildren(h('p', {}, h('a', { href: '#/tasks' }, '← Tasks')),
        h('p', { class: 'empty' }, `Cannot show task ${id}: ${refusal(error)}`));
    }
    return;
  }
  const shown = main.dataset.shown;
  const now = JSON.stringify(task);
  if (first || shown !== now) {
    main.dataset.shown = now;
    renderTask(task);
  }
  // Follow a task that has more to do: its attempts appear as they happen.
  if (['scheduled', 'delivering', 'held'].includes(task.status)) {
    viewTimer = setTimeout(() => showTask(id, false), TASK_EVERY_MS);
  }
}

function renderTask(task) {
  const reload = () => showTask(task.id, true);
  const request = [
    ['Method and URL', h('span', { class: 'mono' }, `${task.method} ${task.url}`)],
    ['Headers', task.header_names.length ? task.header_names.join(', ') : 'none'],
    ['Body', `${task.body_bytes} bytes`],
    ['Timeout', task.timeout],
    ['Success needs the body to be', task.expect_body],
  ];
  const policy = task.retry.schedule
    ? [['Waits', task.retry.schedule.join(', ')]]
    : [['Backoff', `${task.retry.backoff}, from ${task.retry.interval} up to ${task.retry.max_interval}`]];
  policy.push(
    ['Attempts at most', task.retry.max_attempts === null ? `as many as fit in ${task.retry.max_duration}` : String(task.retry.max_attempts)],
    ['Give up after', task.retry.max_duration],
    ['Jitter', task.retry.jitter ? `±${Math.round(task.retry.jitter * 100)} %` : 'none'],
    ['Fail at once on', task.retry.permanent_statuses.join(', ')],
  );
  const state = [
    ['Status', badge(task.status)],
    ['Attempt', String(task.attempt)],
    ['Next attempt', task.next_attempt_at ? when(task.next_attempt_at) : null],
    ['Last error', task.last_error],
    ['Business key', task.key],
    ['Order key', task.order ? h('span', { class: 'mono' }, task.order.key) : null],
    ['Place in its key', task.order ? String(task.order.place) : null],
    ['If it fails for good', task.order
      ? { block: 'it blocks its key until retried or canceled', skip: 'its key moves on' }[task.order.on_failure] || task.order.on_failure
      : null],
    ['Idempotency key', task.idempotency_key],
    ['Registered', when(task.created_at)],
    ['Updated', when(task.updated_at)],
    ['Alert of', task.alert_of ? h('a', { href: `#/tasks/${task.alert_of}`, class: 'mono' }, task.alert_of) : null],
    ['Alerts', task.alerts && task.alerts.length
      ? task.alerts.map((a) => [h('a', { href: `#/tasks/${a}`, class: 'mono' }, a), ' ']) : null],
    ['Failure alerts to', task.on_failure ? task.on_failure.url : null],
    ['Failures reported', { final: 'the final one', every: 'every failed attempt', never: 'none' }[task.notify] || task.notify],
    ['Success reported to', task.on_success ? task.on_success.url : null],
  ];
  const metadata = Object.entries(task.metadata || {});
  main.replaceChildren(
    h('p', {}, h('a', { href: '#/tasks' }, '← Tasks')),
    h('h2', {}, 'Task ', h('code', {}, task.id), badge(task.status)),
    h('div', { class: 'actions' }, actionsFor(task, reload)),
    h('section', { 'aria-labelledby': 'h-attempts' },
      h('h3', { id: 'h-attempts' }, 'Attempts'),
      h('div', { class: 'timeline-wrap' }, timeline(task)),
      attemptsTable(task)),
    h('div', { class: 'cols' },
      h('section', { 'aria-labelledby': 'h-state' }, h('h3', { id: 'h-state' }, 'State'), dl(state)),
      h('section', { 'aria-labelledby': 'h-request' }, h('h3', { id: 'h-request' }, 'Request'), dl(request),
        task.body_preview ? [h('p', {}, 'Body preview'), h('pre', { 'aria-label': 'Body preview' }, task.body_preview)] : null),
      h('section', { 'aria-labelledby': 'h-policy' }, h('h3', { id: 'h-policy' }, 'Retry policy'), dl(policy)),
      task.hold ? h('section', { 'aria-labelledby': 'h-hold' }, h('h3', { id: 'h-hold' }, 'Hold'), dl([
        ['Timeout', task.hold.timeout],
        ['Check URL', task.hold.check_url],
        ['When nobody decides', task.hold.on_unknown],
        ['Checks at most', String(task.hold.max_checks)],
        ['Next check or timeout', task.check_at ? when(task.check_at) : null],
        ['Checks made', (task.checks || []).map((c) => `#${c.number} ${c.status_code ?? c.error ?? ''} ${c.decision ?? ''}`).join('; ')],
      ])) : null,
      metadata.length ? h('section', { 'aria-labelledby': 'h-meta' }, h('h3', { id: 'h-meta' }, 'Metadata'), dl(metadata)) : null));
}

/** The attempts drawn to scale: when each was due (dashed), how late it ran, how long it took. */
function timeline(task) {
  const attempts = task.attempts || [];
  const created = Date.parse(task.created_at);
  const next = task.next_attempt_at ? Date.parse(task.next_attempt_at) : null;
  const times = [created];
  for (const a of attempts) times.push(Date.parse(a.scheduled_at), Date.parse(a.started_at) + a.duration_ms);
  if (next !== null) times.push(next);
  const t0 = Math.min(...times);
  const t1 = Math.max(...times, t0 + 1000);
  const rows = attempts.length + (next !== null ? 1 : 0);
  const W = 900; const left = 44; const right = 16; const top = 10; const rowH = 26;
  const H = top + Math.max(rows, 1) * rowH + 28;
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (W - left - right);
  const outcomes = attempts.map((a) => a.outcome);
  const summary = attempts.length
    ? `${attempts.length} attempt${attempts.length > 1 ? 's' : ''} over ${span(t1 - t0)}: ${outcomes.join(', ')}`
    : 'No attempts yet';
  const svg = s('svg', { class: 'timeline', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': summary });
  const axisY = top + Math.max(rows, 1) * rowH + 6;
  svg.append(s('line', { class: 'axis', x1: left, x2: W - right, y1: axisY, y2: axisY }));
  for (let i = 0; i <= 4; i += 1) {
    const t = t0 + ((t1 - t0) * i) / 4;
    svg.append(s('text', { class: 'tick', x: x(t), y: axisY + 16, 'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle' },
      i === 0 ? when(new Date(t).toISOString()) : `+${span(t - t0)}`));
  }
  attempts.forEach((a, i) => {
    const y = top + i * rowH;
    const due = Date.parse(a.scheduled_at);
    const start = Date.parse(a.started_at);
    const xs = x(start);
    const width = Math.max(3, x(start + a.duration_ms) - xs);
    const what = a.status_code ? `HTTP ${a.status_code}` : (a.error || 'no answer');
    const label = `${what} · ${a.lateness_ms} ms late · took ${span(a.duration_ms)}`;
    const rightSide = xs + width < W * 0.6;
    svg.append(s('g', { 'data-outcome': a.outcome },
      s('title', {}, `Attempt ${a.number}: due ${when(a.scheduled_at)}, ran ${when(a.started_at)}; ${label}; ${a.outcome}`),
      s('text', { x: 4, y: y + 17 }, `#${a.number}`),
      s('line', { class: 'due', x1: x(due), x2: x(due), y1: y + 2, y2: y + 22 }),
      s('line', { class: 'late', x1: x(due), x2: xs, y1: y + 12, y2: y + 12 }),
      s('rect', { class: a.outcome, x: xs, y: y + 5, width, height: 14, rx: 2 }),
      s('text', { x: rightSide ? xs + width + 6 : xs - 6, y: y + 17, 'text-anchor': rightSide ? 'start' : 'end' }, label)));
  });
  if (next !== null) {
    const y = top + attempts.length * rowH;
    svg.append(s('g', { class: 'next-due' },
      s('line', { class: 'next', x1: x(next), x2: x(next), y1: y + 2, y2: y + 22 }),
      s('text', { x: x(next) - 6, y: y + 17, 'text-anchor': 'end' }, `next attempt due ${when(task.next_attempt_at)}`)));
  }
  return svg;
}

function attemptsTable(task) {
  const attempts = task.attempts || [];
  if (!attempts.length) return h('p', { class: 'empty' }, 'No attempts yet.');
  return h('div', { class: 'scroll' }, h('table', { class: 'attempts' },
    h('caption', {}, 'Each attempt'),
    h('thead', {}, h('tr', {}, ['#', 'Due', 'Ran', 'Late', 'Took', 'Status', 'Outcome', 'Error', 'Response']
      .map((c, i) => h('th', { scope: 'col', class: i === 1 || i === 8 ? 'wide' : null }, c)))),
    h('tbody', {}, attempts.map((a) => h('tr', { 'data-outcome': a.outcome },
      h('td', {}, String(a.number)),
      h('td', { class: 'wide' }, when(a.scheduled_at)),
      h('td', {}, when(a.started_at)),
      h('td', {}, `${a.lateness_ms} ms`),
      h('td', {}, span(a.duration_ms)),
      h('td', { class: 'status-code' }, a.status_code === null ? '—' : String(a.status_code)),
      h('td', {}, badge(a.outcome)),
      h('td', {}, a.error || ''),
      h('td', { class: 'wide' }, a.response ? h('code', {}, a.response) : ''))))));
}

// ---------------------------------------------------------------- counts and the live panel

async function refreshStats() {
  let stats;
  try {
    stats = await api('GET', '/v1/stats');
  } catch (error) {
    live.replaceChildren(h('figcaption', {}, `Live figures unavailable: ${refusal(error)}`));
    return;
  }
  drawCounts(stats.counts);
  drawLive(stats.deliveries);
  drawDestinations(stats.destinations);
}

/** Your destinations now busy or paused: calls in flight of the limit, waiting, paused. */
function drawDestinations(destinations) {
  if (!destinations) {
    destinationsBox.replaceChildren(h('p', { class: 'empty' }, 'Per-destination figures are kept by the local server; on AWS, each delivery function sees only its own calls.'));
    return;
  }
  const rows = destinations.map((d) => h('tr', { 'data-destination': d.destination },
    h('td', { class: 'mono' }, d.destination),
    h('td', {}, `${d.in_flight} of ${d.limit}`),
    h('td', {}, String(d.waiting)),
    h('td', {}, d.paused_until ? `until ${when(d.paused_until)}` : '—')));
  if (!rows.length) {
    destinationsBox.replaceChildren(h('p', {}, 'Destinations: none busy or paused.'));
    return;
  }
  destinationsBox.replaceChildren(h('div', { class: 'scroll' }, h('table', { class: 'destinations' },
    h('caption', {}, 'Destinations now busy or paused'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Destination'), h('th', { scope: 'col' }, 'In flight'),
      h('th', { scope: 'col' }, 'Waiting'), h('th', { scope: 'col' }, 'Paused (Retry-After)'))),
    h('tbody', {}, rows))));
}

function drawCounts(counts) {
  if (!counts) {
    countsBox.replaceChildren(h('p', {}, 'This deployment does not count tasks by state (DynamoDB would read every item); filter the list instead.'));
    return;
  }
  countsBox.replaceChildren(...STATUSES.map((st) => h('a', {
    class: `count ${st}`, href: listHash(st, '', ''), 'aria-label': `${counts[st] ?? 0} ${st}`,
  }, h('strong', {}, String(counts[st] ?? 0)), ` ${st}`)));
}

/** Deliveries per minute (bars: succeeded, failed) and lateness p50/p99 (lines, log scale). */
function drawLive(hour) {
  if (!hour) {
    live.replaceChildren(h('figcaption', {}, 'Live figures are kept by the local server; on AWS, CloudWatch has them.'));
    return;
  }
  const minutes = hour.minutes;
  const attempts = minutes.reduce((n, m) => n + m.attempts, 0);
  const failed = minutes.reduce((n, m) => n + m.failed, 0);
  const p50 = hour.lateness_p50_ms;
  const p99 = hour.lateness_p99_ms;
  const caption = attempts
    ? `Last hour: ${attempts} attempt${attempts === 1 ? '' : 's'}, ${failed} failed; lateness p50 ≤ ${p50} ms, p99 ≤ ${p99} ms`
    : 'Last hour: no attempts';
  const W = 600; const barsH = 70; const linesTop = 82; const linesH = 40; const H = linesTop + linesH + 14;
  const step = W / minutes.length;
  const most = Math.max(1, ...minutes.map((m) => m.attempts));
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': caption });
  minutes.forEach((m, i) => {
    const okH = (m.succeeded / most) * barsH;
    const badH = (m.failed / most) * barsH;
    const title = `${new Date(m.at).toLocaleTimeString()}: ${m.attempts} attempts, ${m.failed} failed`;
    svg.append(s('g', {}, s('title', {}, title),
      s('rect', { class: 'ok', x: i * step + 1, y: barsH - okH, width: step - 2, height: okH }),
      s('rect', { class: 'bad', x: i * step + 1, y: barsH - okH - badH, width: step - 2, height: badH })));
  });
  svg.append(s('line', { class: 'axis', x1: 0, x2: W, y1: barsH + 0.5, y2: barsH + 0.5 }));
  svg.append(s('text', { x: 2, y: 10 }, `${most}/min`));
  const logMax = Math.log2(Math.max(2, ...minutes.map((m) => m.lateness_p99_ms || 1)));
  const yOf = (ms) => linesTop + linesH - (Math.log2(Math.max(1, ms)) / logMax) * linesH;
  for (const [field, cls] of [['lateness_p50_ms', 'p50'], ['lateness_p99_ms', 'p99']]) {
    const points = minutes.map((m, i) => (m[field] === null ? null : [i * step + step / 2, yOf(m[field])]))
      .filter(Boolean);
    if (points.length > 1) svg.append(s('polyline', { class: cls, points: points.map((p) => p.join(',')).join(' ') }));
    for (const [cx, cy] of points) svg.append(s('circle', { class: cls, cx, cy, r: 2 }));
  }
  svg.append(s('text', { x: 2, y: H - 2 }, '60 min ago'));
  svg.append(s('text', { x: W - 2, y: H - 2, 'text-anchor': 'end' }, 'now'));
  live.replaceChildren(h('figcaption', {}, caption), svg,
    h('div', { class: 'legend', 'aria-hidden': 'true' },
      h('span', { class: 'ok' }, 'succeeded'), h('span', { class: 'bad' }, 'failed'),
      h('span', { class: 'p50' }, 'lateness p50'), h('span', { class: 'p99' }, 'lateness p99 (log scale)')));
}

route();
