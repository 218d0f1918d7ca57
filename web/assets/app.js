// The SCHED page: routines (Realtime, Batch), batch jobs (Jobs), cron schedules with the SQL
// jobs running now (Schedules) and queues with their jobs (Queues) of pg_jobs, read every 5 s from
// pg_jobs_web, which reads them as the role logged in. No build step, no library.
//
// data-testid used by the browser tests (web/src/e2e/main.rs):
//   login, login-form, login-role, login-password, login-submit   the login form
//   login-wrong, login-unreachable, login-again (server pages)     a failed login
//   lost-page                                                      the database was lost
//   app, whoami, logout, error, notice, content
//   tab-realtime|batch|jobs|schedules|queues, tab-<tab>-count, tab-<tab>-failing  the tabs and their counts
//   text-smaller, text-larger, text-size                           − and + (80 to 200 %)
//   time-zone (data-zone utc|local)                                times in UTC or the browser's zone
//   toggles, schedule-toggle (data-schedule, data-mode)            Commands on / Commands off
//   banners, banner-not-known (data-schedule)                      the scheduler is not heard of
//   filters-button, filters, filter-text, filter-status, filter-problems, group-by, filter-month
//   group (data-group, data-open), group-header, group-status, group-dot, group-counts
//   routine-row (data-schedule, data-routine, data-status), routine-next-run, routine-details, routine-args,
//   routine-waits-for, routine-last-message, routine-restart, routine-stop, routine-messages
//   actions, jobs-cancel-all, jobs-cancel-selected
//   job-group-cancel, job-group-more, job-plain-total
//   job-row (data-id, data-status), job-kind, job-select, job-error, job-details, job-args,
//   job-dependencies, job-computer, job-target, job-stderr
//   cron-table, cron-row (data-name, data-enabled), cron-next, cron-last-fired, cron-last-run,
//   cron-missed, cron-enable, cron-disable, cron-run-now, cron-runs, cron-run (data-id, data-status),
//   cron-run-ran
//   sql-running, sql-running-none, sql-job-row (data-id), sql-job-sql, sql-job-elapsed, sql-job-abort
//   queue-table, queue-row (data-queue, data-paused), queue-ready, queue-scheduled, queue-waiting,
//   queue-running, queue-oldest, queue-failed, queue-paused, queue-limits, queue-pause, queue-resume
//   queue-counted, queue-jobs, queue-jobs-title, queue-rules, queue-charts, queue-chart-done
//   (data-completed, data-failed), queue-chart-ready, queue-chart-hour, queue-chart-day,
//   queue-limit-form, queue-limit-kind, queue-limit-n, queue-limit-per, queue-limit-prefix,
//   queue-limit-ordered, queue-limit-set, queue-key-limits-lift, queue-limits-lift,
//   queue-jobs-close, queue-job-status, queue-job-text,
//   queue-job-key, queue-job-month, queue-job-list, queue-job-table, queue-jobs-more, queue-jobs-none
//   queue-job-row (data-id, data-status, data-live, data-waiting, data-blocked), queue-job-state,
//   queue-job-due, queue-job-tick, queue-job-error, queue-job-abort,
//   queue-job-retry, queue-jobs-abort-ticked, queue-jobs-retry-ticked, queue-jobs-run-ticked,
//   queue-jobs-delete-ticked, queue-jobs-abort-all, queue-jobs-retry-all, queue-jobs-run-all,
//   queue-jobs-delete-all
//   queue-job-details (data-id), queue-job-run-now, queue-job-delete, queue-job-payload, queue-job-attempts, queue-job-errors, queue-job-locked-by,
//   queue-job-result, queue-job-progress, queue-job-concurrency-key, queue-job-dependencies,
//   queue-job-dependency (data-id, data-status), queue-job-blocked, queue-job-unblock
'use strict';

const tid = (id, root = document) => root.querySelector(`[data-testid="${id}"]`);

function nodes(children) {
  return children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c))));
}

// el('div', {testid: 'x', key: 'k', class: 'y', onclick: f, title: 't', 'data-k': v}, child, 'text', ...)
// key: what patch() knows the node by among its siblings, so it is updated in place, not replaced.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'testid') e.dataset.testid = v;
    else if (k === 'key') e.dataset.key = v;
    // A property, not a listener: patch() hands a kept node the handler of the fresh one.
    else if (k === 'onclick') e.onclick = v;
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  e.append(...nodes(children));
  return e;
}

// An SVG element, its attributes set as they are given: the charts' sizes are attributes, never
// styles, which the page's Content-Security-Policy refuses.
function svg(tag, attrs, ...children) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, v);
  e.append(...nodes(children));
  return e;
}

// Makes parent's children look like the ones given, keeping the nodes it already has (by data-key,
// else by kind and place) and changing only what differs: a text selection, the focus or a
// scroll position inside them survives the reading every 5 s.
function patch(parent, ...children) {
  const keyOf = (n, seen) => {
    if (n.nodeType === Node.ELEMENT_NODE && n.dataset.key !== undefined) return 'key ' + n.dataset.key;
    seen[n.nodeName] = (seen[n.nodeName] ?? -1) + 1;
    return n.nodeName + ' ' + seen[n.nodeName];
  };
  const kept = new Map();
  const seenOld = {};
  for (const n of parent.childNodes) kept.set(keyOf(n, seenOld), n);
  const seenNew = {};
  let next = parent.firstChild;
  for (const fresh of nodes(children)) {
    const k = keyOf(fresh, seenNew);
    let node = kept.get(k);
    kept.delete(k);
    if (node && node.nodeName === fresh.nodeName) morph(node, fresh);
    else node = fresh;
    if (node === next) next = next.nextSibling;
    else parent.insertBefore(node, next);
  }
  // What is left from here on was not asked for.
  while (next) {
    const after = next.nextSibling;
    next.remove();
    next = after;
  }
}

function morph(node, fresh) {
  if (node.nodeType !== Node.ELEMENT_NODE) {
    if (node.nodeValue !== fresh.nodeValue) node.nodeValue = fresh.nodeValue;
    return;
  }
  for (const a of [...node.attributes]) if (!fresh.hasAttribute(a.name)) node.removeAttribute(a.name);
  for (const a of fresh.attributes) if (node.getAttribute(a.name) !== a.value) node.setAttribute(a.name, a.value);
  // The fresh handler knows the fresh data (a toggle's handler, which way it switches).
  node.onclick = fresh.onclick;
  // A box ticked by hand no longer follows its attribute.
  if (node.type === 'checkbox') node.checked = fresh.checked;
  patch(node, [...fresh.childNodes]);
}

const store = {
  get(k, d) { try { const v = localStorage.getItem('pgjobs.' + k); return v === null ? d : JSON.parse(v); } catch { return d; } },
  set(k, v) { localStorage.setItem('pgjobs.' + k, JSON.stringify(v)); },
};

const TABS = {
  1: 'realtime', 2: 'batch', 3: 'jobs', 4: 'schedules', 5: 'queues',
  realtime: 'realtime', batch: 'batch', jobs: 'jobs', schedules: 'schedules', queues: 'queues',
};
// The status words, most pressing first, as the extension ranks them, and the sets the page
// filters and counts by (pg_jobs_core): put here by the server (web/src/main.rs, app_js).
const VOCABULARY = /* the vocabulary of pg_jobs_core, put here by the server */ null;
const ROUTINE_STATUSES = VOCABULARY.routine_statuses;
const JOB_STATUSES = VOCABULARY.job_statuses;
const FAILING = new Set(VOCABULARY.routine_failing);
const JOB_PROBLEMS = VOCABULARY.job_problems;
const JOB_ACTIVE = new Set(VOCABULARY.job_active);
const ROUTINE_GROUPINGS = [['group', 'By group'], ['schedule', 'By schedule'], ['computer', 'By computer'], ['status', 'By status'], ['order', 'Run order']];
const JOB_GROUPINGS = [['time', 'By time and routine'], ['routine', 'By routine'], ['status', 'By status'], ['computer', 'By computer'], ['plain', 'One list']];
const PAGE = 200;

function colour(status) {
  if (FAILING.has(status) || status === 'BLOCKED') return 'st-fail';
  switch (status) {
    case 'starting': case 'PENDING': case 'FETCHED': return 'st-starting';
    case 'waiting': case 'WAITING': return 'st-waiting';
    case 'completed': case 'COMPLETED': return 'st-completed';
    case 'running': case 'RUNNING': return 'st-running';
    case 'CANCEL': return 'st-cancel';
    case 'WAS RUNNING': return 'st-unknown';
    // A queue job's and a SQL job's run's words (job_status, job_runs.status).
    case 'failed': case 'timed out': case 'lost': return 'st-fail';
    case 'created': return 'st-waiting';
    // A queue job blocked by a dependency that failed or was aborted (one waiting for its
    // dependencies is 'waiting', above).
    case 'blocked': return 'st-fail';
    case 'started': return 'st-running';
    case 'succeeded': return 'st-completed';
    default: return 'st-scheduled';
  }
}
const badge = (status, testid) => el('span', { class: 'status ' + colour(status), testid }, status);

// "7 routines · 1 ERROR · 6 running": the whole first, then each status most pressing first, the
// number always before its word; one status alone needs no total.
function countsText(counts, words, noun) {
  const present = Object.keys(counts).filter((w) => counts[w]).sort((a, b) => words.indexOf(a) - words.indexOf(b));
  const each = present.map((w) => `${counts[w]} ${w}`);
  if (present.length === 1) return each[0];
  return [plural(present.reduce((n, w) => n + counts[w], 0), noun), ...each].join(' · ');
}
const plural = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

// Every time on the page is written one way, "2026-12-02 01:13:25 UTC", in UTC or, if the viewer
// asks for it, in the browser's time zone ("2026-12-02 10:13:25 GMT+9").
const TIME_ZONES = { utc: 'UTC', local: undefined };
const timeFormats = {};
function formatTime(t) {
  // No time, or none a date can hold ('infinity', the run_at of a queue job waiting for its
  // dependencies): never written as a time.
  if (!t || Number.isNaN(new Date(t).getTime())) return '—';
  const zone = state.timeZone;
  timeFormats[zone] ??= new Intl.DateTimeFormat('en-US', {
    timeZone: TIME_ZONES[zone], hourCycle: 'h23', timeZoneName: 'short',
    year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
  const p = {};
  for (const part of timeFormats[zone].formatToParts(new Date(t))) p[part.type] = part.value;
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${p.timeZoneName}`;
}

// "0.4 s", "12 s", "3 min 5 s", "2 h 3 min": how long a run took or has run.
function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  const s = Math.floor(seconds);
  if (s < 3600) return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

const state = {
  me: null,
  timeZone: store.get('timeZone', 'utc') === 'local' ? 'local' : 'utc',
  tab: 'realtime',
  schedules: [],
  routines: [],
  summary: { active: 0, months: [] },
  text: '',
  status: { routines: '', jobs: '' },
  problems: false,
  groupBy: { routines: store.get('routineGrouping', 'group'), jobs: store.get('jobGrouping', 'time') },
  month: '',
  openRoutine: null,        // "schedule\u0000routine"
  messages: [],             // the open routine's messages
  jobGroups: [],
  openJobGroups: new Map(), // key -> {limit, jobs}
  plain: { limit: PAGE, rows: [], total: 0 },
  openJob: null,
  jobDetails: null,
  selected: new Set(),
  cronSchedules: [],
  sqlRunning: [],
  openCron: null,           // the name of the schedule whose runs are shown
  cronRuns: null,           // its runs, once read
  queues: [],
  openQueue: null,          // the name of the queue whose jobs are shown
  queueJobFilter: { status: '', q: '', key: '', month: '' },
  queueJobPages: 1,         // pages of PAGE jobs read
  queueJobs: null,          // the open queue's jobs, once read
  queueJobCounts: null,     // how many of its filter's jobs each action on the filter takes
  queueJobsMore: false,     // the last page read was full
  openQueueJob: null,       // the id of the queue job whose details are shown
  queueJobDetails: null,
  queueTicked: new Set(),
  queueMinutes: null,       // the open queue's minutes, once read
  queueChartHours: 1,       // how far back its charts go: 1 or 24 hours
};
const kind = () => (state.tab === 'jobs' ? 'jobs' : 'routines');

// ---- the server ----

class Lost extends Error {}
class LoggedOut extends Error {}

async function call(path, options) {
  const r = await fetch(path, Object.assign({ credentials: 'same-origin' }, options));
  if (r.status === 401) throw new LoggedOut();
  const body = await r.json().catch(() => ({}));
  if (r.status === 503 && body.lost) throw new Lost();
  if (!r.ok) {
    const e = new Error(body.sqlstate ? `${body.sqlstate}: ${body.message}${body.hint ? ' (' + body.hint + ')' : ''}` : body.error || r.statusText);
    e.body = body;
    throw e;
  }
  return body;
}
const get = (path, params) => call(path + (params ? '?' + new URLSearchParams(params) : ''));
const post = (path, body) => call(path, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': state.me.csrf },
  body: JSON.stringify(body),
});

function showError(e) {
  if (e instanceof Lost) { tid('app').hidden = true; tid('lost-page').hidden = false; return; }
  if (e instanceof LoggedOut) { location.href = '/'; return; }
  const box = tid('error');
  box.textContent = e ? e.message : '';
  box.hidden = !e;
}
const notice = (text) => { tid('notice').textContent = text; };

// ---- filters ----

function jobStatusParam() {
  const chosen = state.status.jobs;
  if (!state.problems) return chosen;
  return chosen || JOB_PROBLEMS.join(',');
}
function jobFilter() {
  const f = { q: state.text, status: jobStatusParam(), month: state.month };
  for (const k of Object.keys(f)) if (!f[k]) delete f[k];
  return f;
}
function filterCount() {
  let n = (state.text ? 1 : 0) + (state.status[kind()] ? 1 : 0) + (state.problems ? 1 : 0);
  if (kind() === 'jobs' && state.month) n += 1;
  return n;
}
const filtering = () => filterCount() > 0;

function routineMatches(r) {
  if (state.tab === 'realtime' && !r.realtime) return false;
  if (state.tab === 'batch' && r.realtime) return false;
  if (state.status.routines && r.status !== state.status.routines) return false;
  if (state.problems && !FAILING.has(r.status)) return false;
  if (state.text) {
    const hay = [r.schedule, r.routine, r.group_name, r.computer, r.args, r.last_message, r.status].join(' ').toLowerCase();
    if (!hay.includes(state.text.toLowerCase())) return false;
  }
  return true;
}

function renderFilterControls() {
  const k = kind();
  // The Schedules tab's lists are short; the Queues tab filters a queue's jobs in a bar of its own.
  const unfiltered = state.tab === 'schedules' || state.tab === 'queues';
  tid('filters-button').hidden = unfiltered;
  tid('filters').hidden = unfiltered || !store.get('filtersOpen', false);
  const n = filterCount();
  tid('filters-button').textContent = n ? `Filters · ${n}` : 'Filters';
  const status = tid('filter-status');
  const words = k === 'jobs' ? JOB_STATUSES : ROUTINE_STATUSES;
  if (status.dataset.kind !== k) {
    status.replaceChildren(el('option', { value: '' }, 'Any status'), ...words.map((w) => el('option', { value: w }, w)));
    status.dataset.kind = k;
  }
  status.value = state.status[k];
  tid('filter-problems').checked = state.problems;
  const group = tid('group-by');
  if (group.dataset.kind !== k) {
    group.replaceChildren(...(k === 'jobs' ? JOB_GROUPINGS : ROUTINE_GROUPINGS).map(([v, t]) => el('option', { value: v }, t)));
    group.dataset.kind = k;
  }
  group.value = state.groupBy[k];
  tid('month-label').hidden = k !== 'jobs';
  const month = tid('filter-month');
  const months = state.summary.months || [];
  const wanted = ['', ...months].join(',');
  if (month.dataset.months !== wanted) {
    month.replaceChildren(el('option', { value: '' }, 'Active now'), ...months.map((m) => el('option', { value: m }, m.slice(0, 7))));
    month.dataset.months = wanted;
  }
  month.value = state.month;
}

// ---- the header: tabs, toggles, banners ----

function renderHeader() {
  let rt = 0, rtFail = 0, bt = 0, btFail = 0;
  for (const s of state.schedules) { rt += s.realtime; rtFail += s.realtime_failing; bt += s.batch; btFail += s.batch_failing; }
  // Each number with its word ("7 routines", "3 failing"), never two bare numbers side by side.
  tid('tab-realtime-count').textContent = plural(rt, 'routine');
  tid('tab-realtime-failing').textContent = rtFail ? `${rtFail} failing` : '';
  tid('tab-batch-count').textContent = plural(bt, 'routine');
  tid('tab-batch-failing').textContent = btFail ? `${btFail} failing` : '';
  tid('tab-jobs-count').textContent = `${state.summary.active} active`;
  tid('tab-schedules-count').textContent = plural(state.cronSchedules.length, 'schedule');
  const failingSchedules = state.cronSchedules.filter(cronFailing).length;
  tid('tab-schedules-failing').textContent = failingSchedules ? `${failingSchedules} failing` : '';
  tid('tab-queues-count').textContent = plural(state.queues.length, 'queue');
  for (const b of document.querySelectorAll('.tab')) b.classList.toggle('active', b.dataset.tab === state.tab);
  tid('whoami').textContent = state.me ? state.me.role : '';
  const zone = tid('time-zone');
  zone.dataset.zone = state.timeZone;
  zone.textContent = state.timeZone === 'utc' ? 'Times: UTC' : `Times: ${Intl.DateTimeFormat().resolvedOptions().timeZone}`;
  patch(tid('toggles'), state.schedules.map((s) => {
    const on = s.mode === 'control';
    const at = formatTime(s.mode_at);
    const who = s.mode_by ? `switched ${on ? 'on' : 'off'} by ${s.mode_by} at ${at}` : `set ${on ? 'on' : 'off'} by the setting at ${at}`;
    return el('button', {
      type: 'button', class: 'toggle ' + (on ? 'on' : 'off'), testid: 'schedule-toggle', key: scheduleRef(s),
      'data-schedule': s.schedule, 'data-mode': s.mode, title: `${who}; the scheduler: ${s.doing}`,
      onclick: () => switchMode(s, on ? 'observe' : 'control'),
    }, `${s.schedule}: ${on ? 'Commands on' : 'Commands off'}`);
  }));
  patch(tid('banners'), state.schedules.filter((s) => s.not_known).map((s) => el('div', {
    class: 'banner', testid: 'banner-not-known', key: scheduleRef(s), 'data-schedule': s.schedule,
  }, `Schedule ${s.schedule}: its scheduler has not written its state since ${s.state_at ? formatTime(s.state_at) : 'it was made'}. `
     + 'Nobody is watching its routines: they are shown as not known (WAS RUNNING).')));
}

function switchTimeZone() {
  state.timeZone = state.timeZone === 'utc' ? 'local' : 'utc';
  store.set('timeZone', state.timeZone);
  render();
}

async function switchMode(s, mode) {
  const question = mode === 'observe'
    ? `Switch the commands of ${s.schedule} off? The scheduler keeps the status and sends no command.`
    : `Switch the commands of ${s.schedule} on? The scheduler starts and restarts its routines.`;
  if (!confirm(question)) return;
  try {
    await post('/api/schedules/mode', { schedule: scheduleRef(s), mode });
    notice(`${s.schedule}: commands ${mode === 'observe' ? 'off' : 'on'}`);
    await refresh();
  } catch (e) { showError(e); }
}

// ---- groups (shared by both kinds) ----

function groupOpenByHand(key) { return store.get('openGroups', {})[key]; }
function setGroupOpen(key, open) {
  const all = store.get('openGroups', {});
  all[key] = open;
  store.set('openGroups', all);
}

function groupBox(key, open, header, body, onToggle) {
  return el('div', { class: 'group', testid: 'group', key, 'data-group': key, 'data-open': open ? 'true' : 'false' },
    el('div', { class: 'group-header', testid: 'group-header', onclick: onToggle }, el('span', {}, open ? '▾' : '▸'), header),
    open ? body : null);
}

// ---- routines ----

// A schedule as the functions take it: names are each owner's, OWNER/NAME is always one schedule.
const scheduleRef = (x) => x.owner + '/' + x.schedule;
const routineKey = (r) => scheduleRef(r) + '\u0000' + r.routine;
function routineGroupKey(r) {
  switch (state.groupBy.routines) {
    case 'schedule': return r.schedule;
    case 'computer': return r.computer;
    case 'status': return r.status;
    default: return r.group_name || '(no group)';
  }
}

function groupSummary(statuses) {
  const counts = {};
  for (const s of statuses) counts[s] = (counts[s] || 0) + 1;
  const countText = el('span', { class: 'counts', testid: 'group-counts' }, countsText(counts, ROUTINE_STATUSES, 'routine'));
  if (statuses.length && statuses.every((s) => s === 'running')) {
    return [el('span', { class: 'dot', testid: 'group-dot' }), el('span', { class: 'status st-running', testid: 'group-status' }, 'RUNNING'), countText];
  }
  const mostPressing = Object.keys(counts).sort((a, b) => ROUTINE_STATUSES.indexOf(a) - ROUTINE_STATUSES.indexOf(b))[0];
  return [badge(mostPressing, 'group-status'), countText];
}

function renderRoutines() {
  const rows = state.routines.filter(routineMatches);
  const content = tid('content');
  if (!rows.length) { patch(content, el('p', { class: 'notice' }, 'No routine here.')); return; }
  if (state.groupBy.routines === 'order') {
    rows.sort((a, b) => (a.run_order ?? 1e9) - (b.run_order ?? 1e9) || a.seq - b.seq);
    patch(content, el('div', { class: 'group', testid: 'run-order' }, rows.map(routineRow)));
    return;
  }
  const groups = new Map();
  for (const r of rows) {
    const k = routineGroupKey(r);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  const keys = [...groups.keys()].sort();
  patch(content, keys.map((k) => {
    const members = groups.get(k);
    const stored = `${state.tab}|${state.groupBy.routines}|${k}`;
    const byHand = groupOpenByHand(stored);
    // A filter opens the groups it found something in; otherwise realtime groups start shut.
    const open = filtering() ? true : byHand !== undefined ? byHand : state.tab !== 'realtime';
    return groupBox(k, open, [el('span', { class: 'key' }, k), ...groupSummary(members.map((r) => r.status))],
      members.map(routineRow), () => { setGroupOpen(stored, !open); render(); });
  }));
}

function routineRow(r) {
  const key = routineKey(r);
  const row = el('div', {
    class: 'row', testid: 'routine-row', key, 'data-schedule': r.schedule, 'data-routine': r.routine, 'data-status': r.status,
    onclick: () => openRoutine(r),
  }, badge(r.status), el('span', { class: 'name' }, r.routine.replace(/^[^@]*@[^:]*:/, '')),
  el('span', { class: 'meta' }, r.computer),
  r.status === 'scheduled' && r.next_run_at ? el('span', { class: 'next', testid: 'routine-next-run' }, `next run ${formatTime(r.next_run_at)}`) : null,
  el('span', { class: 'msg' }, r.last_message || ''));
  return state.openRoutine === key ? [row, routineDetails(r)] : row;
}

function routineDetails(r) {
  const item = (label, value, testid) => [el('dt', {}, label), el('dd', { testid }, value === null || value === undefined || value === '' ? '—' : value)];
  return el('div', { class: 'details', testid: 'routine-details', key: 'details ' + routineKey(r) },
    el('dl', {},
      item('Routine', r.routine), item('Schedule', r.schedule), item('Group', r.group_name), item('Computer', r.computer),
      item('Kind', r.realtime ? 'realtime' : `batch at ${r.runtimes || 'the start of the day'}`),
      item('Arguments', r.args, 'routine-args'),
      item('Depends on', (r.dependencies || []).join(', ')),
      item('Waits for', (r.waits_for || []).join(', '), 'routine-waits-for'),
      r.realtime ? null : item('Next run', r.next_run_at && formatTime(r.next_run_at)),
      item('Posted', formatTime(r.posted_at)), item('Started', formatTime(r.started_at)), item('Ended', formatTime(r.ended_at)),
      item('Restarts today', r.restarts), item('Run order', r.run_order), item('Job', r.job_id),
      item('Last message', r.last_message ? `${formatTime(r.last_message_at)} ${r.last_level || ''} ${r.last_message}` : null, 'routine-last-message')),
    r.commandable ? el('div', {},
      el('button', { type: 'button', testid: 'routine-restart', onclick: (e) => { e.stopPropagation(); command(r, 'restart'); } }, 'Restart'), ' ',
      el('button', { type: 'button', testid: 'routine-stop', onclick: (e) => { e.stopPropagation(); command(r, 'stop'); } }, 'Stop'))
      : el('p', { class: 'notice' }, 'This routine is not commanded from here (the scheduler itself, or external).'),
    el('ul', { testid: 'routine-messages' }, state.messages.map((m) => el('li', { key: `${m.at} ${m.message}` }, `${formatTime(m.at)} ${m.level}: ${m.message}`))));
}

async function openRoutine(r) {
  const k = routineKey(r);
  state.openRoutine = state.openRoutine === k ? null : k;
  state.messages = [];
  render();
  if (state.openRoutine) await loadMessages();
}

async function loadMessages() {
  const r = state.routines.find((x) => routineKey(x) === state.openRoutine);
  if (!r) return;
  try { state.messages = await get('/api/routine/messages', { schedule: scheduleRef(r), routine: r.routine }); } catch (e) { showError(e); }
  render();
}

async function command(r, what) {
  const question = what === 'restart'
    ? `Restart ${r.routine}? It is ended if it runs and started again.`
    : `Stop ${r.routine}?${r.realtime ? ' The scheduler starts a realtime routine again once it has been silent for 45 s.' : ''}`;
  if (!confirm(question)) return;
  try {
    const answer = await post(`/api/routines/${what}`, { schedule: scheduleRef(r), routine: r.routine });
    notice(`${what} of ${r.routine}: ${answer}`);
    await refresh();
  } catch (e) { showError(e); }
}

// ---- jobs ----

function activeCount(counts) {
  return Object.entries(counts || {}).reduce((n, [s, c]) => n + (JOB_ACTIVE.has(s) ? c : 0), 0);
}

function renderJobs() {
  const content = tid('content');
  const plain = state.groupBy.jobs === 'plain';
  const total = plain ? activeCount(state.plain.counts) : state.jobGroups.reduce((n, g) => n + activeCount(g.counts), 0);
  patch(tid('actions'),
    el('button', { type: 'button', testid: 'jobs-cancel-all', disabled: total === 0, onclick: () => cancelWhere({}, total) }, `Cancel all (${total})`),
    el('button', { type: 'button', testid: 'jobs-cancel-selected', disabled: state.selected.size === 0, onclick: cancelSelected }, `Cancel selected (${state.selected.size})`));
  if (plain) {
    const p = state.plain;
    patch(content, el('p', { testid: 'job-plain-total' }, plural(p.total, 'job')),
      el('div', { class: 'group' }, p.rows.map(jobRow)),
      p.rows.length < p.total ? el('button', { type: 'button', class: 'more', testid: 'job-group-more', onclick: () => { p.limit += PAGE; refresh(); } }, 'Show more') : null);
    return;
  }
  if (!state.jobGroups.length) { patch(content, el('p', { class: 'notice' }, 'No job here.')); return; }
  patch(content, state.jobGroups.map((g) => {
    const loaded = state.openJobGroups.get(g.group_key);
    const n = activeCount(g.counts);
    const header = [el('span', { class: 'key' }, jobGroupName(g.group_key)), badge(g.status, 'group-status'),
      el('span', { class: 'counts', testid: 'group-counts' }, countsText(g.counts, JOB_STATUSES, 'job')),
      n ? el('button', { type: 'button', testid: 'job-group-cancel', onclick: (e) => { e.stopPropagation(); cancelWhere({ by: state.groupBy.jobs, group: g.group_key }, n); } }, `Cancel ${n}`) : null];
    const body = loaded ? [loaded.jobs.map(jobRow),
      loaded.jobs.length < g.jobs ? el('button', { type: 'button', class: 'more', testid: 'job-group-more', onclick: (e) => { e.stopPropagation(); loaded.limit += PAGE; refresh(); } }, `Show more (${loaded.jobs.length} of ${g.jobs})`) : null] : null;
    return groupBox(g.group_key, !!loaded, header, body, () => {
      if (loaded) state.openJobGroups.delete(g.group_key);
      else state.openJobGroups.set(g.group_key, { limit: PAGE, jobs: [] });
      refresh();
    });
  }));
}

// A group by time is keyed by the minute due in UTC ("2026-12-02 01:13 report"): shown as every
// time on the page is.
function jobGroupName(key) {
  const minute = state.groupBy.jobs === 'time' && /^(\d{4}-\d\d-\d\d \d\d:\d\d) (.*)$/.exec(key);
  return minute ? `${formatTime(minute[1].replace(' ', 'T') + ':00Z')} ${minute[2]}` : key;
}

function jobRow(j) {
  const active = JOB_ACTIVE.has(j.status);
  const row = el('div', { class: 'row', testid: 'job-row', key: j.id, 'data-id': j.id, 'data-status': j.status, onclick: () => openJob(j) },
    active ? el('input', {
      type: 'checkbox', testid: 'job-select', checked: state.selected.has(j.id),
      onclick: (e) => { e.stopPropagation(); if (e.target.checked) state.selected.add(j.id); else state.selected.delete(j.id); render(); },
    }) : el('span', { class: 'nobox' }, ''),
    el('span', { class: 'meta' }, '#' + j.id), badge(j.status),
    // A kill job sits among its routine's runs: it ends the run, it is not one.
    j.kind === 'kill' ? el('span', { class: 'kind', testid: 'job-kind', title: 'This job ends the routine\'s run on its computer' }, 'kill') : null,
    el('span', { class: 'name' }, j.routine || j.command), el('span', { class: 'meta' }, (j.args || []).join(' ')),
    el('span', { class: 'meta' }, j.target ? `${j.computer} → ${j.target}` : j.computer),
    el('span', { class: 'meta' }, formatTime(j.due_at)),
    j.status === 'ERROR' && j.error ? el('span', { class: 'err', testid: 'job-error' }, j.error.trim().split('\n').pop()) : null);
  return state.openJob === j.id && state.jobDetails ? [row, jobDetails(state.jobDetails)] : row;
}

function jobDetails(j) {
  const item = (label, value, testid) => [el('dt', {}, label), el('dd', { testid }, value === null || value === undefined || value === '' ? '—' : value)];
  return el('div', { class: 'details', testid: 'job-details', key: 'details ' + j.id }, el('dl', {},
    item('Job', j.id), item('Hash', j.hash), item('Owner', j.owner), item('Kind', j.kind), item('Status', j.status),
    item('May be taken by', j.computer, 'job-computer'), item('Taken by', j.target, 'job-target'),
    item('Routine', j.routine), item('Command', j.command), item('Arguments', (j.args || []).join(' '), 'job-args'),
    item('Revision', j.revision ? JSON.stringify(j.revision) : null),
    item('Waits for', (j.dependencies || []).map((d) => `job ${d.id}: ${d.status}`).join(', '), 'job-dependencies'),
    item('Blocked', j.blocked_reason), item('Due', formatTime(j.due_at)), item('Started', formatTime(j.started_at)), item('Ended', formatTime(j.ended_at)),
    item('Exit code', j.exit_code), item('Run time', j.run_time), item('Attempts', `${j.attempt} of ${j.max_attempts}`),
    item('Error', j.error), item('Stderr', j.stderr, 'job-stderr'), item('Stdout', j.stdout)));
}

async function openJob(j) {
  state.openJob = state.openJob === j.id ? null : j.id;
  state.jobDetails = null;
  if (state.openJob) {
    try { state.jobDetails = (await get('/api/job', { id: j.id }))[0] || null; } catch (e) { showError(e); }
  }
  render();
}

async function cancelWhere(extra, n) {
  if (!confirm(`Cancel ${n} active job${n === 1 ? '' : 's'}?`)) return;
  try {
    const where = Object.assign(jobFilter(), extra);
    const done = await post('/api/jobs/cancel', { where });
    notice(`${done.length} job(s) cancelled`);
    await refresh();
  } catch (e) { showError(e); }
}

async function cancelSelected() {
  const ids = [...state.selected];
  if (!confirm(`Cancel ${ids.length} selected job${ids.length === 1 ? '' : 's'}?`)) return;
  try {
    const done = await post('/api/jobs/cancel', { jobs: ids });
    state.selected.clear();
    notice(`${done.length} job(s) cancelled`);
    await refresh();
  } catch (e) { showError(e); }
}

// ---- cron schedules and SQL jobs ----

// Its last job failed, or its last slot could not be fired.
const cronFailing = (s) => s.last_status === 'failed' || !!s.last_error;
const MISSED_RULES = { skip: 'skip (passed over)', once: 'once (one catch-up run)' };
const missedRule = (s) => MISSED_RULES[s.missed] || `all (the latest ${s.max_catch_up})`;
const shortSql = (sql) => (sql && sql.length > 80 ? sql.slice(0, 79) + '…' : sql || '');

function renderSchedules() {
  patch(tid('actions'));
  const heads = (...names) => el('thead', {}, el('tr', {}, names.map((n) => el('th', {}, n))));
  patch(tid('content'),
    el('h2', { key: 'cron-title' }, 'Cron schedules'),
    state.cronSchedules.length
      ? el('table', { class: 'grid', testid: 'cron-table', key: 'cron' },
        heads('Schedule', 'Work', 'Slots', 'Time zone', 'Next slot', 'Last fired', 'Last job', 'Missed slots', ''),
        el('tbody', {}, state.cronSchedules.map(cronRow)))
      : el('p', { class: 'notice', key: 'cron' }, 'No cron schedule.'),
    el('h2', { key: 'sql-title' }, 'SQL jobs running now'),
    state.sqlRunning.length
      ? el('table', { class: 'grid', testid: 'sql-running', key: 'sql' },
        heads('Job', 'Schedule', 'SQL', 'Started', 'Elapsed', ''),
        el('tbody', {}, state.sqlRunning.map(sqlJobRow)))
      : el('p', { class: 'notice', testid: 'sql-running-none', key: 'sql' }, 'No SQL job is running.'));
}

function lastJob(s) {
  if (!s.last_job_id) return s.last_error ? el('span', { class: 'err' }, s.last_error) : '—';
  // A SQL job's run says how it ended and how long it took; a queue job's how long it ran since
  // its last attempt began, and when it ended.
  const outcome = s.last_run_status || s.last_status;
  const ran = s.last_job_seconds === null || s.last_job_seconds === undefined ? ''
    : `${formatDuration(s.last_job_seconds)}${s.last_ended ? ', ' : ' so far'}`;
  const took = s.last_run_status
    ? `${formatDuration(s.last_seconds)}${s.last_run_status === 'running' ? ' so far' : ''}`
    : `${ran}${s.last_ended ? `ended ${formatTime(s.last_ended)}` : ''}`;
  return [el('span', { class: 'meta' }, `#${s.last_job_id}`), ' ', badge(outcome), ' ', el('span', { class: 'took' }, took),
    s.last_run_message ? el('span', { class: 'msg' }, ' ' + s.last_run_message) : null,
    s.last_error ? el('span', { class: 'err' }, ' ' + s.last_error) : null];
}

function cronRow(s) {
  const open = state.openCron === s.name;
  const row = el('tr', {
    class: s.enabled ? 'cron' : 'cron disabled', testid: 'cron-row', key: s.name, 'data-name': s.name,
    'data-enabled': s.enabled ? 'true' : 'false', onclick: () => openCron(s),
  },
  el('td', { class: 'name' }, open ? '▾ ' : '▸ ', s.name),
  el('td', { class: 'name', title: s.work }, s.sql_job ? `SQL: ${shortSql(s.work)}` : s.work),
  el('td', { class: 'name' }, s.schedule),
  el('td', {}, s.time_zone),
  el('td', { testid: 'cron-next' }, s.enabled ? formatTime(s.next_slot) : 'disabled'),
  el('td', { testid: 'cron-last-fired' }, formatTime(s.last_fired)),
  el('td', { testid: 'cron-last-run' }, lastJob(s)),
  el('td', { testid: 'cron-missed' }, missedRule(s)),
  el('td', {}, s.enabled
    ? el('button', { type: 'button', testid: 'cron-disable', onclick: (e) => { e.stopPropagation(); setCronEnabled(s, false); } }, 'Disable')
    : el('button', { type: 'button', testid: 'cron-enable', onclick: (e) => { e.stopPropagation(); setCronEnabled(s, true); } }, 'Enable'),
    ' ',
    el('button', { type: 'button', testid: 'cron-run-now', onclick: (e) => { e.stopPropagation(); runCronNow(s); } }, 'Run now')));
  if (!open) return row;
  return [row, el('tr', { class: 'details', key: 'runs ' + s.name }, el('td', { colspan: 9 },
    !state.cronRuns ? el('p', { class: 'notice' }, 'Reading…')
      : state.cronRuns.length ? el('table', { class: 'grid', testid: 'cron-runs' },
        el('thead', {}, el('tr', {}, ['Job', 'Slot', 'Status', 'Attempt', 'Added', ...(s.sql_job ? ['Runs'] : ['Began', 'Ran', 'Ended', 'Error'])].map((n) => el('th', {}, n)))),
        el('tbody', {}, state.cronRuns.map((j) => cronRun(s, j))))
      : el('p', { class: 'notice' }, 'No job of this schedule is kept.')))];
}

// A SQL job's runs say when it ran and how it ended: its end in job_list is when its executor's
// transaction began.
function cronRun(s, j) {
  const runs = (j.runs || []).map((r) => el('div', { key: r.attempt },
    `attempt ${r.attempt}: `, badge(r.status), ` ${formatDuration(r.seconds)}${r.status === 'running' ? ' so far' : ''}`,
    ` (started ${formatTime(r.started_at)})`,
    r.message ? el('span', { class: 'err' }, ' ' + r.message) : null));
  return el('tr', { testid: 'cron-run', key: j.id, 'data-id': j.id, 'data-status': j.status },
    el('td', {}, '#' + j.id), el('td', {}, formatTime(j.slot)), el('td', {}, badge(j.status)), el('td', {}, j.attempt),
    el('td', {}, formatTime(j.added_at)),
    s.sql_job ? el('td', {}, runs) : [
      el('td', {}, formatTime(j.began_at)),
      el('td', { testid: 'cron-run-ran' }, `${formatDuration(j.seconds)}${j.seconds !== null && !j.ended_at ? ' so far' : ''}`),
      el('td', {}, formatTime(j.ended_at)), el('td', { class: 'err' }, j.error || '')]);
}

function sqlJobRow(j) {
  return el('tr', { testid: 'sql-job-row', key: j.id, 'data-id': j.id },
    el('td', {}, '#' + j.id), el('td', {}, j.schedule || '—'),
    el('td', { class: 'name', testid: 'sql-job-sql', title: j.sql }, shortSql(j.sql)),
    el('td', {}, formatTime(j.started_at)),
    el('td', { testid: 'sql-job-elapsed' }, formatDuration(j.elapsed_seconds)),
    el('td', {}, el('button', { type: 'button', testid: 'sql-job-abort', onclick: () => abortSqlJob(j) }, 'Abort')));
}

async function openCron(s) {
  state.openCron = state.openCron === s.name ? null : s.name;
  state.cronRuns = null;
  render();
  if (state.openCron) {
    try { await loadCronRuns(); } catch (e) { showError(e); }
    render();
  }
}

// A reading that comes back after another schedule was opened is not that schedule's.
async function loadCronRuns() {
  const name = state.openCron;
  const runs = await get('/api/cron/runs', { name });
  if (state.openCron === name) state.cronRuns = runs;
}

async function setCronEnabled(s, enabled) {
  const question = enabled
    ? `Enable schedule ${s.name}? It adds a job at each of its slots again.`
    : `Disable schedule ${s.name}? It adds no job until it is enabled again.`;
  if (!confirm(question)) return;
  try {
    await post(enabled ? '/api/cron/enable' : '/api/cron/disable', { name: s.name });
    notice(`${s.name}: ${enabled ? 'enabled' : 'disabled'}`);
    await refresh();
  } catch (e) { showError(e); }
}

async function runCronNow(s) {
  if (!confirm(`Run schedule ${s.name} now? It adds its job at once; its slots go on as before.`)) return;
  try {
    const job = await post('/api/cron/run', { name: s.name });
    notice(`${s.name}: job ${job} added`);
    await refresh();
  } catch (e) { showError(e); }
}

async function abortSqlJob(j) {
  if (!confirm(`Abort SQL job ${j.id}? Its statement is cancelled and the job ends aborted.\n\n${shortSql(j.sql)}`)) return;
  try {
    const status = await post('/api/sql-jobs/abort', { id: j.id });
    notice(`SQL job ${j.id}: ${status}`);
    await refresh();
  } catch (e) { showError(e); }
}

async function loadSchedulesTab() {
  state.sqlRunning = await get('/api/sql-jobs/running');
  if (state.openCron && !state.cronSchedules.some((s) => s.name === state.openCron)) state.openCron = null;
  if (state.openCron) await loadCronRuns();
}

// ---- queues and their jobs ----

// The extension's own queues (batch jobs, SQL jobs, the compute scheduler): jobs_pause refuses
// them and jobs_retry passes their jobs over; they are stopped on the Jobs and Schedules tabs.
const reservedQueue = (queue) => queue.startsWith('pg_jobs.');
// A job is live until it has an end (an aborted one may still be leased, its worker not yet told).
const liveJob = (j) => j.end_time === null;
const retryable = (j) => !liveJob(j) && (j.status === 'failed' || j.status === 'aborted') && !reservedQueue(j.queue);
// A job that waits for its dependencies (the server says: waiting; job_list shows no run_at until
// the last of them completes, the table's being 'infinity'); blocked (blocked_by: `job 12
// failed`) when one of them failed or was aborted. waits_for: how many have not finished.
const waitsForJobs = (j) => liveJob(j) && !!j.waiting;
// A job waiting for its time (or its next attempt), by the database's clock: Run now makes it due.
const dueLater = (j) => liveJob(j) && !!j.due_later;
// A job waiting to run (for its time, its turn or its dependencies): Delete removes it.
const deletable = (j) => liveJob(j) && j.status === 'created';
const waitingText = (j) => (j.blocked_by ? `blocked: ${j.blocked_by}`
  : j.waits_for ? `waiting for ${plural(j.waits_for, 'job')}` : 'waiting for its dependencies');

// A rate limit's window in whole units: "1 min", "30 s", "1 h 30 min".
function formatWindow(seconds) {
  let left = Math.round(seconds);
  const parts = [];
  for (const [size, unit] of [[3600, 'h'], [60, 'min'], [1, 's']]) {
    if (left >= size) { parts.push(`${Math.floor(left / size)} ${unit}`); left %= size; }
  }
  return parts.length ? parts.join(' ') : `${seconds} s`;
}

function queueLimits(q) {
  const limits = [
    q.max_running ? `${q.max_running} running at most` : null,
    q.rate_claims ? `${q.rate_claims} claims per ${formatWindow(q.rate_per_seconds)}` : null,
    q.max_per_key ? `${q.max_per_key} per key${q.key_ordered ? ', in order' : ''}` : null,
    q.key_rate_claims ? `${q.key_rate_claims} claims per key per ${formatWindow(q.key_rate_per_seconds)}` : null,
    // The keys of a prefix, under their own limits (each key under its longest prefix).
    ...(q.key_prefix_limits || []).map((p) => [
      p.max_per_key ? `${p.max_per_key} per key${p.ordered ? ', in order' : ''}` : null,
      p.rate_claims ? `${p.rate_claims} claims per key per ${formatWindow(p.rate_per_seconds)}` : null,
    ].filter(Boolean).map((limit) => `${p.prefix} ${limit}`).join(' · ')),
  ].filter(Boolean);
  return limits.length ? limits.join(' · ') : 'none';
}

function renderQueues() {
  const jobs = state.queueJobs || [];
  const ticked = jobs.filter((j) => state.queueTicked.has(j.id));
  const abortable = ticked.filter(liveJob);
  const toRetry = ticked.filter(retryable);
  const toRun = ticked.filter(dueLater);
  const toDelete = ticked.filter(deletable);
  patch(tid('actions'), state.openQueue ? [
    el('button', { type: 'button', testid: 'queue-jobs-abort-ticked', disabled: !abortable.length, onclick: () => abortQueueJobs(abortable) },
      `Abort ticked (${abortable.length})`),
    el('button', { type: 'button', testid: 'queue-jobs-retry-ticked', disabled: !toRetry.length, onclick: () => retryQueueJobs(toRetry) },
      `Retry ticked (${toRetry.length})`),
    el('button', { type: 'button', testid: 'queue-jobs-run-ticked', disabled: !toRun.length, onclick: () => runQueueJobsNow(toRun) },
      `Run ticked now (${toRun.length})`),
    el('button', { type: 'button', testid: 'queue-jobs-delete-ticked', disabled: !toDelete.length, onclick: () => deleteQueueJobs(toDelete) },
      `Delete ticked (${toDelete.length})`),
    ...filterActions()] : []);
  const heads = (...names) => el('thead', {}, el('tr', {}, names.map((n) => el('th', {}, n))));
  const counted = state.queues.find((q) => q.counted_by_minute);
  patch(tid('content'),
    el('h2', { key: 'queues-title' }, 'Queues'),
    counted ? el('p', { class: 'notice', testid: 'queue-counted', key: 'counted' },
      `Jobs as counted at ${formatTime(counted.counted_at)}: there are too many to count at each reading.`) : null,
    state.queues.length
      ? el('table', { class: 'grid', testid: 'queue-table', key: 'queues' },
        heads('Queue', 'Ready', 'Waiting for time', 'Waiting for jobs', 'Running', 'Oldest ready', 'Failed, last hour', 'Paused', 'Limits', ''),
        el('tbody', {}, state.queues.map(queueRow)))
      : el('p', { class: 'notice', key: 'queues' }, 'No queue.'));
  if (!state.openQueue) return;
  const q = state.queues.find((x) => x.queue === state.openQueue);
  tid('queue-jobs-title').textContent = `Jobs of queue ${state.openQueue}`;
  tid('queue-rules').textContent = q ? queueRules(q) : '';
  patch(tid('queue-charts'), queueCharts());
  // The extension's own queues take no limits (jobs_limit refuses them).
  tid('queue-limit-form').hidden = reservedQueue(state.openQueue);
  patch(tid('queue-job-list'),
    !state.queueJobs ? el('p', { class: 'notice', key: 'reading' }, 'Reading…')
      : jobs.length ? el('table', { class: 'grid', testid: 'queue-job-table', key: 'jobs' },
        heads('', 'Job', 'Status', 'Task', 'Key', 'Attempt', 'Added', 'Due, waiting, leased or ended', 'Last error', ''),
        el('tbody', {}, jobs.map(queueJobRow)))
        : el('p', { class: 'notice', testid: 'queue-jobs-none', key: 'none' }, 'No job here.'),
    state.queueJobsMore ? el('button', { type: 'button', class: 'more', testid: 'queue-jobs-more', onclick: moreQueueJobs }, `Show ${PAGE} more`) : null);
}

// The actions on every job the filter finds (the newest FILTER_ACTED_ON of them), each with how
// many it would act on, as the server counted them.
function filterActions() {
  const counts = state.queueJobCounts;
  if (!counts) return [];
  const button = (testid, label, n, run) => el('button', {
    type: 'button', testid, disabled: !n, onclick: () => run(filtered(n)),
  }, `${label} (${n})`);
  return [el('span', { class: 'meta' }, ' · this filter\'s jobs: '),
    button('queue-jobs-abort-all', 'Abort all', counts.abort, abortQueueJobs),
    button('queue-jobs-retry-all', 'Retry all', counts.retry, retryQueueJobs),
    button('queue-jobs-run-all', 'Run all now', counts.run_now, runQueueJobsNow),
    button('queue-jobs-delete-all', 'Delete all', counts.delete, deleteQueueJobs)];
}

// The open queue's charts over the last hour (a bar a minute) or day (a bar per 10 minutes), from
// the minutes the server keeps (jobs_queue_minutes): completions and failed attempts, and the jobs
// ready at each minute's end (the last of its minutes). The minute under way has its completions
// and failures so far, and no count of ready jobs yet.
function queueCharts() {
  const minutes = state.queueMinutes;
  if (!minutes) return [];
  const hours = state.queueChartHours;
  const step = hours === 1 ? 60 : 600;
  const bars = (hours * 3600) / step;
  const at = (m) => Math.floor(Date.parse(m.minute) / 1000 / step);
  const last = Math.max(Math.floor(Date.now() / 1000 / step), ...minutes.map(at));
  const slots = Array.from({ length: bars }, () => null);
  for (const m of minutes) {
    const i = at(m) - (last - bars + 1);
    if (i >= 0) slots[i] = m;
  }
  const sum = (name) => minutes.reduce((n, m) => n + Number(m[name] || 0), 0);
  const per = step === 60 ? 'minute' : '10 minutes';
  // A bar per slot, its parts stacked from the bottom, in a box `bars` wide and HEIGHT high.
  const HEIGHT = 40;
  const chart = (testid, caption, parts, data) => {
    const top = Math.max(1, ...slots.map((m) => (m ? parts.reduce((n, p) => n + Number(m[p] || 0), 0) : 0)));
    const bar = (m, i) => {
      let y = HEIGHT;
      return svg('g', { class: 'bar' }, m ? [
        svg('title', {}, `${formatTime(m.minute)}: ${parts.map((p) => `${m[p] ?? '—'} ${p}`).join(', ')}`),
        parts.map((p) => {
          const height = (HEIGHT * Number(m[p] || 0)) / top;
          y -= height;
          return svg('rect', { class: p, x: i + 0.1, y, width: 0.8, height });
        })] : null);
    };
    return el('figure', { class: 'chart', testid, key: testid, ...data },
      svg('svg', { class: 'bars', viewBox: `0 0 ${bars} ${HEIGHT}`, preserveAspectRatio: 'none' }, slots.map(bar)),
      el('figcaption', {}, `${caption} (highest ${top})`));
  };
  const range = (testid, label, h) => el('button', {
    type: 'button', testid, disabled: hours === h,
    onclick: () => { state.queueChartHours = h; state.queueMinutes = null; render(); refresh(); },
  }, label);
  return [
    chart('queue-chart-done', `Completed and failed per ${per}`, ['completed', 'failed'],
      { 'data-completed': sum('completed'), 'data-failed': sum('failed') }),
    chart('queue-chart-ready', `Ready at the end of each ${per}`, ['ready'], {}),
    el('span', { key: 'range' }, range('queue-chart-hour', 'Last hour', 1), ' ', range('queue-chart-day', 'Last day', 24)),
  ];
}

function queueRules(q) {
  const keeps = { all: 'History keeps every finished job', failures: 'History keeps failed and aborted jobs only', none: 'History keeps no finished job' };
  return [keeps[q.keeps] || `History keeps ${q.keeps}`,
    q.dead_letter_queue ? `a job that fails its last attempt is copied to ${q.dead_letter_queue}` : null].filter(Boolean).join('; ') + '.';
}

function queueRow(q) {
  const open = state.openQueue === q.queue;
  const button = (testid, label, pause) => el('button', {
    type: 'button', testid, onclick: (e) => { e.stopPropagation(); pauseQueue(q, pause); },
  }, label);
  return el('tr', {
    class: 'queue', testid: 'queue-row', key: q.queue, 'data-queue': q.queue,
    'data-paused': q.paused_at ? 'true' : 'false', onclick: () => openQueue(q.queue),
  },
  el('td', { class: 'name' }, open ? '▾ ' : '▸ ', q.queue),
  el('td', { testid: 'queue-ready' }, q.ready),
  el('td', { testid: 'queue-scheduled' }, q.scheduled),
  el('td', { testid: 'queue-waiting', title: 'Jobs waiting for their dependencies, blocked ones too' }, q.waiting),
  el('td', { testid: 'queue-running' }, q.running),
  el('td', { testid: 'queue-oldest', title: q.oldest_ready_at ? `ready since ${formatTime(q.oldest_ready_at)}` : null },
    q.oldest_ready_at ? formatDuration(q.oldest_ready_seconds) : '—'),
  el('td', { testid: 'queue-failed', class: q.failed_last_hour ? 'err' : null }, q.failed_last_hour),
  el('td', { testid: 'queue-paused', class: q.paused_at ? 'paused' : null },
    q.paused_at ? `paused by ${q.paused_by} at ${formatTime(q.paused_at)}` : 'no'),
  el('td', { testid: 'queue-limits' }, queueLimits(q)),
  el('td', {}, reservedQueue(q.queue)
    ? el('span', { class: 'meta', title: 'The extension\'s own queue: stop its jobs on the Jobs or Schedules tab' }, 'the extension\'s')
    : q.paused_at ? button('queue-resume', 'Resume', false) : button('queue-pause', 'Pause', true)));
}

function lastError(j) {
  const errors = j.errors || [];
  return errors.length ? errors[errors.length - 1].error : (j.result && j.result.error) || '';
}

function queueJobRow(j) {
  const live = liveJob(j);
  const waits = waitsForJobs(j);
  const tickable = live || retryable(j);
  const act = (testid, label, run) => el('button', { type: 'button', testid, onclick: (e) => { e.stopPropagation(); run([j]); } }, label);
  const row = el('tr', {
    class: 'queue-job', testid: 'queue-job-row', key: j.id, 'data-id': j.id, 'data-status': j.status,
    'data-live': live ? 'true' : 'false', 'data-waiting': waits ? 'true' : 'false',
    'data-blocked': waits && j.blocked_by ? 'true' : 'false', onclick: () => openQueueJob(j.id),
  },
  el('td', {}, tickable ? el('input', {
    type: 'checkbox', testid: 'queue-job-tick', checked: state.queueTicked.has(j.id),
    onclick: (e) => { e.stopPropagation(); if (e.target.checked) state.queueTicked.add(j.id); else state.queueTicked.delete(j.id); render(); },
  }) : null),
  el('td', {}, '#' + j.id),
  // A job waiting for its dependencies reads as waiting (or blocked), not as created and due.
  el('td', { testid: 'queue-job-state' }, badge(!waits ? j.status : j.blocked_by ? 'blocked' : 'waiting')),
  el('td', { class: 'name' }, j.task),
  el('td', { class: 'name' }, j.idempotency_key || ''), el('td', {}, `${j.attempt} of ${j.max_attempts}`),
  el('td', {}, formatTime(j.start_time)),
  el('td', { testid: 'queue-job-due', class: waits && j.blocked_by ? 'err' : null, title: waits ? waitingText(j) : null }, !live ? `ended ${formatTime(j.end_time)}`
    : waits ? waitingText(j)
      : j.status === 'created' ? `due ${formatTime(j.run_at)}` : `leased until ${formatTime(j.locked_until)}`),
  el('td', { class: 'err', testid: 'queue-job-error', title: lastError(j) || null }, lastError(j)),
  el('td', {}, live ? act('queue-job-abort', 'Abort', abortQueueJobs) : retryable(j) ? act('queue-job-retry', 'Retry', retryQueueJobs) : null));
  const d = state.openQueueJob === j.id && state.queueJobDetails;
  return d ? [row, el('tr', { class: 'details', key: 'details ' + j.id }, el('td', { colspan: 10 }, queueJobDetails(d)))] : row;
}

function queueJobDetails(d) {
  const item = (label, value, testid) => [el('dt', {}, label), el('dd', { testid }, value === null || value === undefined || value === '' ? '—' : value)];
  const json = (v) => (v === null || v === undefined ? null : JSON.stringify(v, null, 2));
  const errors = (d.errors || []).map((e) => el('li', { key: e.attempt }, `attempt ${e.attempt} at ${formatTime(e.at)}: ${e.error}`));
  const waits = waitsForJobs(d);
  const dependencies = (d.dependencies || []).map(dependencyItem);
  const due = !waits ? formatTime(d.run_at) : d.blocked_by ? 'not while it is blocked'
    : `once its dependencies have completed (${waitingText(d)})`;
  // The job's line above says its id, status and task; what went wrong comes first.
  return el('div', { testid: 'queue-job-details', 'data-id': d.id }, el('dl', {},
    item('Attempts', `${d.attempt} of ${d.max_attempts}`, 'queue-job-attempts'),
    item('Errors', errors.length ? el('ul', {}, errors) : null, 'queue-job-errors'),
    waits && d.blocked_by ? item('Blocked by', d.blocked_by, 'queue-job-blocked') : null,
    item('Depends on', dependencies.length ? el('ul', {}, dependencies) : null, 'queue-job-dependencies'),
    item('Locked by', d.locked_by, 'queue-job-locked-by'),
    liveJob(d) ? item('Lease until', d.locked_until && formatTime(d.locked_until)) : null,
    item('Progress', json(d.progress), 'queue-job-progress'),
    item('Result', json(d.result), 'queue-job-result'),
    item('Payload', json(d.payload), 'queue-job-payload'),
    item('Concurrency key', d.concurrency_key, 'queue-job-concurrency-key'),
    item('Key', d.idempotency_key ? `${d.idempotency_key} (${d.key_rule})` : null),
    item('Priority', d.priority), item('First due', formatTime(d.due_at)), liveJob(d) ? item('Due', due) : null,
    item('Added', formatTime(d.start_time)), item('Ended', formatTime(d.end_time))),
    waits ? el('p', {}, el('button', {
      type: 'button', testid: 'queue-job-unblock', onclick: (e) => { e.stopPropagation(); unblockQueueJob(d); },
    }, 'Unblock'), el('span', { class: 'meta' }, ' lets it run now without waiting for its dependencies')) : null,
    dueLater(d) ? el('p', {}, el('button', {
      type: 'button', testid: 'queue-job-run-now', onclick: (e) => { e.stopPropagation(); runQueueJobsNow([d]); },
    }, 'Run now'), el('span', { class: 'meta' }, ` makes it due now instead of ${formatTime(d.run_at)}`)) : null,
    deletable(d) ? el('p', {}, el('button', {
      type: 'button', testid: 'queue-job-delete', onclick: (e) => { e.stopPropagation(); deleteQueueJobs([d]); },
    }, 'Delete'), el('span', { class: 'meta' }, ' removes it, keeping no history of it')) : null);
}

// A job depended on, with its status (waiting or blocked when it waits itself; not kept when its
// queue's history dropped it): its number opens its details when its line is in the list shown.
function dependencyItem(x) {
  const status = x.status || 'no longer kept';
  const shown = x.queue === state.openQueue && (state.queueJobs || []).some((j) => j.id === x.id);
  return el('li', { key: x.id, testid: 'queue-job-dependency', 'data-id': x.id, 'data-status': status },
    shown ? el('button', { type: 'button', class: 'link', title: 'Show this job', onclick: (e) => { e.stopPropagation(); openDependency(x.id); } }, '#' + x.id)
      : '#' + x.id,
    x.task ? ` ${x.task}` : '', x.queue && x.queue !== state.openQueue ? ` in queue ${x.queue}` : '', ': ', badge(status));
}

async function openDependency(id) {
  await openQueueJob(id);
  const row = document.querySelector(`[data-testid="queue-job-row"][data-id="${id}"]`);
  if (row) row.scrollIntoView({ block: 'nearest' });
}

function queueJobParams(offset) {
  const f = state.queueJobFilter;
  const params = { queue: state.openQueue, offset, status: f.status, q: f.q, key: f.key, month: f.month && f.month + '-01' };
  for (const k of Object.keys(params)) if (params[k] === '') delete params[k];
  return params;
}

// Every page read so far, read again; a reading asked for before the queue or a filter changed
// is not shown.
async function loadQueueJobs() {
  const asked = JSON.stringify(queueJobParams(0));
  const { offset, ...filter } = queueJobParams(0);
  const counts = (await get('/api/queues/jobs/counts', filter))[0];
  const found = new Map();
  let full = true;
  for (let page = 0; page < state.queueJobPages && full; page++) {
    const rows = await get('/api/queues/jobs', queueJobParams(page * PAGE));
    for (const j of rows) found.set(j.id, j);
    full = rows.length === PAGE;
  }
  if (!state.openQueue || JSON.stringify(queueJobParams(0)) !== asked) return;
  state.queueJobs = [...found.values()];
  state.queueJobCounts = counts;
  state.queueJobsMore = full;
  for (const id of state.queueTicked) if (!found.has(id)) state.queueTicked.delete(id);
}

async function loadQueueJobDetails() {
  const id = state.openQueueJob;
  const details = (await get('/api/queues/job', { id }))[0] || null;
  if (state.openQueueJob === id) state.queueJobDetails = details;
}

async function loadQueuesTab() {
  if (state.openQueue) {
    const queue = state.openQueue;
    const minutes = await get('/api/queues/minutes', { queue, hours: state.queueChartHours });
    if (state.openQueue === queue) state.queueMinutes = minutes;
    await loadQueueJobs();
  }
  if (state.openQueueJob) await loadQueueJobDetails();
}

function queueJobsFilterChanged() {
  state.queueJobPages = 1;
  state.queueJobs = null;
  state.queueJobCounts = null;
  state.queueJobsMore = false;
  state.queueTicked.clear();
  state.openQueueJob = null;
  state.queueJobDetails = null;
}

// A queue opens with no filter set.
function openQueue(queue) {
  state.openQueue = state.openQueue === queue ? null : queue;
  state.queueMinutes = null;
  state.queueJobFilter = { status: '', q: '', key: '', month: '' };
  for (const testid of ['queue-job-status', 'queue-job-text', 'queue-job-key', 'queue-job-month']) tid(testid).value = '';
  queueJobsFilterChanged();
  render();
  refresh();
}

async function openQueueJob(id) {
  state.openQueueJob = state.openQueueJob === id ? null : id;
  state.queueJobDetails = null;
  if (state.openQueueJob) {
    try { await loadQueueJobDetails(); } catch (e) { showError(e); }
  }
  render();
}

function moreQueueJobs() {
  state.queueJobPages += 1;
  refresh();
}

function wireQueueJobFilters() {
  const set = (name, value) => {
    state.queueJobFilter[name] = value;
    queueJobsFilterChanged();
    render();
    refresh();
  };
  tid('queue-job-status').addEventListener('change', (e) => set('status', e.target.value));
  tid('queue-job-month').addEventListener('change', (e) => set('month', e.target.value));
  let typing = null;
  for (const [testid, name] of [['queue-job-text', 'q'], ['queue-job-key', 'key']]) {
    tid(testid).addEventListener('input', (e) => {
      clearTimeout(typing);
      typing = setTimeout(() => set(name, e.target.value.trim()), 300);
    });
  }
  tid('queue-jobs-close').addEventListener('click', () => openQueue(state.openQueue));
  tid('queue-limit-kind').addEventListener('change', showLimitFields);
  showLimitFields();
  tid('queue-limit-set').addEventListener('click', setQueueLimit);
  tid('queue-key-limits-lift').addEventListener('click', () => liftQueueLimits(true));
  tid('queue-limits-lift').addEventListener('click', () => liftQueueLimits(false));
}

// The fields of the limit chosen: a window for rate limits, a prefix of keys for key limits.
function showLimitFields() {
  const kind = tid('queue-limit-kind').value;
  for (const e of document.querySelectorAll('[data-limit]')) e.hidden = !e.dataset.limit.split(' ').includes(kind);
}

// A limit of the open queue as the form says it (jobs_limit, jobs_rate_limit, jobs_key_limit,
// jobs_key_rate_limit): the database checks the numbers and says what is wrong.
async function setQueueLimit() {
  const queue = state.openQueue;
  const kind = tid('queue-limit-kind').value;
  const n = tid('queue-limit-n').valueAsNumber;
  const per = tid('queue-limit-per').valueAsNumber;
  const prefix = tid('queue-limit-prefix').value;
  const keys = prefix ? `each key starting with ${prefix}` : 'each key';
  const [path, body, said] = {
    running: ['/api/queues/limit', { queue, max_running: n }, `${n} jobs running at once`],
    rate: ['/api/queues/rate-limit', { queue, claims: n, per_seconds: per }, `${n} claims per ${per} s`],
    key: ['/api/queues/key-limit', { queue, max_per_key: n, ordered: tid('queue-limit-ordered').checked, prefix },
      `${n} jobs of ${keys} at once${tid('queue-limit-ordered').checked ? ', in order' : ''}`],
    'key-rate': ['/api/queues/key-rate-limit', { queue, claims: n, per_seconds: per, prefix },
      `${n} claims of ${keys} per ${per} s`],
  }[kind];
  if (!confirm(`Limit queue ${queue} to ${said}?`)) return;
  try {
    await post(path, body);
    notice(`${queue}: limited to ${said}`);
    await refresh();
  } catch (e) { showError(e); }
}

// Lifts the open queue's limits: those of the keys of the prefix given (jobs_key_unlimit), or
// every one (jobs_unlimit).
async function liftQueueLimits(keysOnly) {
  const queue = state.openQueue;
  const prefix = tid('queue-limit-prefix').value;
  const which = !keysOnly ? 'every limit' : prefix ? `the limits of the keys starting with ${prefix}` : 'the limits of every key';
  if (!confirm(`Lift ${which} of queue ${queue}?`)) return;
  try {
    const [answer] = await post(keysOnly ? '/api/queues/key-unlimit' : '/api/queues/unlimit', { queue, prefix });
    notice(`${queue}: ${Object.values(answer || {})[0] ? `${which} lifted` : `no such limit`}`);
    await refresh();
  } catch (e) { showError(e); }
}

async function pauseQueue(q, pause) {
  const question = pause
    ? `Pause queue ${q.queue}? Workers take none of its jobs until it is resumed; adds, running jobs and retries go on.`
    : `Resume queue ${q.queue}? Its workers take its jobs again.`;
  if (!confirm(question)) return;
  try {
    await post(pause ? '/api/queues/pause' : '/api/queues/resume', { queue: q.queue });
    notice(`${q.queue}: ${pause ? 'paused' : 'resumed'}`);
    await refresh();
  } catch (e) { showError(e); }
}

const jobsNamed = (jobs) => (jobs.length === 1 ? `job ${jobs[0].id} (${jobs[0].task})` : `${jobs.length} ticked jobs`);

// What an action acts on: jobs of the list (one, or the ticked ones), or the n jobs of the filter
// it acts on among the newest FILTER_ACTED_ON the filter finds (the server picks them again when
// it acts, so the n are as counted at the last reading).
const FILTER_ACTED_ON = 1000;
const listed = (jobs) => ({
  body: { jobs: jobs.map((j) => j.id) }, count: jobs.length, named: jobsNamed(jobs),
  done: () => { for (const j of jobs) state.queueTicked.delete(j.id); },
});
function filtered(n) {
  const { offset, ...where } = queueJobParams(0);
  const newest = state.queueJobCounts.found >= FILTER_ACTED_ON
    ? ` (among the newest ${FILTER_ACTED_ON.toLocaleString('en-US')} jobs it finds; act again for the next ones)` : '';
  return { body: { where }, count: n, named: `the ${plural(n, 'job')} of this filter${newest}`, done: () => state.queueTicked.clear() };
}
const aimed = (jobsOrFilter) => (Array.isArray(jobsOrFilter) ? listed(jobsOrFilter) : jobsOrFilter);

async function abortQueueJobs(jobsOrFilter) {
  const t = aimed(jobsOrFilter);
  if (!confirm(`Abort ${t.named}? A waiting job ends aborted at once; a running one's worker is told at its next heartbeat.`)) return;
  try {
    const answers = await post('/api/queues/jobs/abort', t.body);
    const aborted = answers.filter((a) => a.status === 'aborted').length;
    notice(`${plural(aborted, 'job')} aborted${aborted < t.count ? ` (${t.count - aborted} had finished)` : ''}`);
    t.done();
    await refresh();
  } catch (e) { showError(e); }
}

async function unblockQueueJob(j) {
  const why = j.blocked_by ? `It is blocked (${j.blocked_by})` : `It is ${waitingText(j)}`;
  if (!confirm(`Unblock ${jobsNamed([j])}? ${why}; it becomes due now, without waiting for its dependencies.`)) return;
  try {
    const answers = await post('/api/queues/jobs/unblock', { jobs: [j.id] });
    notice(`job ${j.id} unblocked: due ${formatTime(answers[0] && answers[0].due)}`);
    await refresh();
  } catch (e) { showError(e); }
}

async function runQueueJobsNow(jobsOrFilter) {
  const t = aimed(jobsOrFilter);
  if (!confirm(`Run ${t.named} now? Each becomes due now instead of at its time; a worker takes it at its next claim.`)) return;
  try {
    const moved = await post('/api/queues/jobs/run-now', t.body);
    notice(`${plural(moved.length, 'job')} due now${moved.length < t.count
      ? ` (${t.count - moved.length} not: taken by a worker or ended meanwhile)` : ''}`);
    t.done();
    await refresh();
  } catch (e) { showError(e); }
}

async function deleteQueueJobs(jobsOrFilter) {
  const t = aimed(jobsOrFilter);
  if (!confirm(`Delete ${t.named}? Each is removed and kept nowhere, its key free again; a job that depends on it is blocked (or skipped) as after an abort.`)) return;
  try {
    const deleted = await post('/api/queues/jobs/delete', t.body);
    notice(`${plural(deleted.length, 'job')} deleted${deleted.length < t.count
      ? ` (${t.count - deleted.length} not: taken by a worker or ended meanwhile)` : ''}`);
    t.done();
    await refresh();
  } catch (e) { showError(e); }
}

async function retryQueueJobs(jobsOrFilter) {
  const t = aimed(jobsOrFilter);
  if (!confirm(`Retry ${t.named}? Each is due again now with fresh attempts, its errors kept.`)) return;
  try {
    const back = await post('/api/queues/jobs/retry', t.body);
    notice(`${plural(back.length, 'job')} brought back${back.length < t.count
      ? ` (${t.count - back.length} not: back already, or its key taken by another job)` : ''}`);
    t.done();
    await refresh();
  } catch (e) { showError(e); }
}

// ---- reading, every 5 s ----

let refreshing = null;
let again = false;
async function refresh() {
  if (refreshing) { again = true; return refreshing; }
  refreshing = (async () => {
    try {
      const [routines, summary, cron, queues] = await Promise.all([
        get('/api/routines'), get('/api/jobs/summary'), get('/api/cron/schedules'), get('/api/queues')]);
      state.schedules = routines.schedules;
      state.routines = routines.routines;
      state.summary = summary;
      state.cronSchedules = cron;
      state.queues = queues;
      if (state.tab === 'jobs') await loadJobs();
      else if (state.tab === 'schedules') await loadSchedulesTab();
      else if (state.tab === 'queues') await loadQueuesTab();
      else if (state.openRoutine) state.messages = await get('/api/routine/messages', openRoutineParams());
      showError(null);
    } catch (e) { showError(e); }
    render();
  })();
  await refreshing;
  refreshing = null;
  if (again) { again = false; await refresh(); }
}

function openRoutineParams() {
  const [schedule, routine] = state.openRoutine.split('\u0000');
  return { schedule, routine };
}

async function loadJobs() {
  const f = jobFilter();
  if (state.groupBy.jobs === 'plain') {
    const found = await get('/api/jobs/list', Object.assign({ limit: state.plain.limit }, f));
    Object.assign(state.plain, { rows: found.rows, total: found.total, counts: found.counts });
    return;
  }
  const by = state.groupBy.jobs;
  state.jobGroups = await get('/api/jobs/groups', Object.assign({ by }, f));
  const present = new Set(state.jobGroups.map((g) => g.group_key));
  for (const [key, loaded] of state.openJobGroups) {
    if (!present.has(key)) { state.openJobGroups.delete(key); continue; }
    loaded.jobs = await get('/api/jobs/group', Object.assign({ by, group: key, limit: loaded.limit }, f));
  }
}

function render() {
  renderHeader();
  renderFilterControls();
  tid('queue-jobs').hidden = state.tab !== 'queues' || !state.openQueue;
  if (state.tab === 'jobs') renderJobs();
  else if (state.tab === 'schedules') renderSchedules();
  else if (state.tab === 'queues') renderQueues();
  else { patch(tid('actions')); renderRoutines(); }
}

function setTab(name) {
  if (!name || name === state.tab) return;
  state.tab = name;
  const url = new URL(location.href);
  url.searchParams.set('tab', name);
  history.replaceState(null, '', url);
  render();
  refresh();
}

function setTextSize(size) {
  size = Math.min(200, Math.max(80, size));
  store.set('textSize', size);
  document.documentElement.style.fontSize = size + '%';
  tid('text-size').textContent = size + '%';
}

function jobsFilterChanged() {
  state.openJobGroups.clear();
  state.plain.limit = PAGE;
  state.selected.clear();
  state.openJob = null;
}

function wire() {
  for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => setTab(b.dataset.tab));
  tid('filters-button').addEventListener('click', () => { store.set('filtersOpen', !store.get('filtersOpen', false)); render(); });
  let typing = null;
  tid('filter-text').addEventListener('input', (e) => {
    state.text = e.target.value.trim();
    render();
    clearTimeout(typing);
    if (kind() === 'jobs') typing = setTimeout(() => { jobsFilterChanged(); refresh(); }, 300);
  });
  tid('filter-status').addEventListener('change', (e) => { state.status[kind()] = e.target.value; if (kind() === 'jobs') jobsFilterChanged(); render(); refresh(); });
  tid('filter-problems').addEventListener('change', (e) => { state.problems = e.target.checked; if (kind() === 'jobs') jobsFilterChanged(); render(); refresh(); });
  tid('group-by').addEventListener('change', (e) => {
    const k = kind();
    state.groupBy[k] = e.target.value;
    store.set(k === 'jobs' ? 'jobGrouping' : 'routineGrouping', e.target.value);
    if (k === 'jobs') jobsFilterChanged();
    render();
    refresh();
  });
  tid('filter-month').addEventListener('change', (e) => { state.month = e.target.value; jobsFilterChanged(); render(); refresh(); });
  wireQueueJobFilters();
  tid('text-smaller').addEventListener('click', () => setTextSize(store.get('textSize', 100) - 10));
  tid('text-larger').addEventListener('click', () => setTextSize(store.get('textSize', 100) + 10));
  tid('time-zone').addEventListener('click', switchTimeZone);
  tid('logout').addEventListener('click', async () => { try { await post('/logout', {}); } catch (e) { /* gone anyway */ } location.href = '/'; });
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA')) {
      if (e.key === 'Escape') t.blur();
      return;
    }
    if (TABS[e.key] && /^[1-5]$/.test(e.key)) { setTab(TABS[e.key]); e.preventDefault(); }
    else if (state.tab === 'schedules' || state.tab === 'queues') return;
    else if (e.key === '/') {
      e.preventDefault();
      store.set('filtersOpen', true);
      render();
      tid('filter-text').focus();
    } else if (e.key === 'p' || e.key === 'P') {
      state.problems = !state.problems;
      if (kind() === 'jobs') jobsFilterChanged();
      render();
      refresh();
    }
  });
}

async function start() {
  setTextSize(store.get('textSize', 100));
  try {
    state.me = await call('/api/me');
  } catch (e) {
    if (e instanceof LoggedOut) { tid('login').hidden = false; tid('login-role').focus(); return; }
    showError(e);
    return;
  }
  tid('app').hidden = false;
  const asked = new URL(location.href).searchParams.get('tab');
  state.tab = TABS[asked] || 'realtime';
  if (asked && TABS[asked] !== asked) {
    const url = new URL(location.href);
    url.searchParams.set('tab', state.tab);
    history.replaceState(null, '', url);
  }
  wire();
  await refresh();
  setInterval(refresh, 5000);
}

start();
