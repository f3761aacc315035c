/**
 * The console page (`/console`): the live log with its filters, pause and detail pane. Bundled by
 * esbuild into `console.js` (assets.ts); it loads nothing from elsewhere, inserts what the service
 * sends only as text, and sends the admin token only in an `Authorization` header.
 */
import { FAULT_KINDS } from '../../applied.ts';
import type { ChartPoint } from '../chart-point.ts';
import type { LiveRow } from '../live-row.ts';
import { type CurlSource, curlCommand } from './curl.ts';
import { type LiveFilter, matchesFilter, STATUS_CLASSES, type StatusClass } from './filter.ts';
import { SseParser } from './sse-parser.ts';
import { apiFetch, TOKEN_KEY, token, whenRefused } from './ui/api.ts';
import { chartPoint, chartPoints, showCharts } from './ui/charts-panel.ts';
import { byId, cell } from './ui/dom.ts';
import './ui/dry-run-panel.ts';
import { startFaults, stopFaults } from './ui/faults-panel.ts';
import { openReplay, type ReplaySource } from './ui/replay-panel.ts';
import { loadScenarios } from './ui/scenarios-panel.ts';

/** Rows the page keeps; the oldest go first. */
const MAX_ROWS = 2000;
/** Rows held while paused; past this the oldest waiting go (and are counted as dropped). */
const MAX_WAITING = 5000;
/** Characters of a body shown in the detail pane. */
const BODY_PREVIEW_CHARS = 8192;
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 15_000;

interface DetailEntry extends CurlSource, ReplaySource {
  readonly id: string;
  readonly timestamp: string;
  readonly path: string;
  readonly protocol: string;
  readonly remote_addr: string;
  readonly status: number | null;
  readonly duration_ms: number | null;
  readonly body_size: number;
  readonly faults: LiveRow['faults'];
  readonly upstream?: { url: string; status: number | null; duration_ms: number | null; error?: string };
  readonly grpc?: { code: number; status: string };
}

function faultText(fault: LiveRow['faults'][number]): string {
  return `${fault.kind} ${fault.value} (${fault.control})`;
}

const el = {
  conn: byId('conn'),
  forget: byId<HTMLButtonElement>('forget'),
  login: byId<HTMLFormElement>('login'),
  token: byId<HTMLInputElement>('token'),
  loginError: byId('login-error'),
  main: byId('main'),
  path: byId<HTMLInputElement>('f-path'),
  status: byId<HTMLSelectElement>('f-status'),
  fault: byId<HTMLSelectElement>('f-fault'),
  session: byId<HTMLInputElement>('f-session'),
  pause: byId<HTMLButtonElement>('pause'),
  clear: byId<HTMLButtonElement>('clear'),
  shown: byId('shown'),
  total: byId('total'),
  waitingBox: byId('waiting-box'),
  waiting: byId('waiting'),
  droppedBox: byId('dropped-box'),
  dropped: byId('dropped'),
  notice: byId('notice'),
  rows: byId<HTMLTableSectionElement>('rows'),
  empty: byId('empty'),
  example: byId('example'),
  detail: byId('detail'),
};

const state = {
  rows: [] as Array<{ row: LiveRow; tr: HTMLTableRowElement }>,
  waiting: [] as LiveRow[],
  paused: false,
  /** Rows the service dropped for this console, and rows dropped here while paused. */
  droppedByService: 0,
  droppedHere: 0,
  /** The highest sequence number shown: a reconnection's backfill repeats rows already here. */
  lastSeq: -1,
  selected: undefined as string | undefined,
  filter: { path: '', statusClass: '', fault: '', session: '' } as LiveFilter,
};

// ---- filters ----------------------------------------------------------------------------------

for (const statusClass of STATUS_CLASSES) el.status.add(new Option(statusClass, statusClass));
for (const kind of FAULT_KINDS) el.fault.add(new Option(kind, kind));

function readFilter(): LiveFilter {
  return {
    path: el.path.value,
    statusClass: el.status.value as StatusClass | '',
    fault: el.fault.value,
    session: el.session.value,
  };
}

function applyFilter(): void {
  state.filter = readFilter();
  for (const { row, tr } of state.rows) tr.hidden = !matchesFilter(row, state.filter);
  updateStats();
}

for (const input of [el.path, el.session]) input.addEventListener('input', applyFilter);
for (const select of [el.status, el.fault]) select.addEventListener('change', applyFilter);

function updateStats(): void {
  let shown = 0;
  for (const { tr } of state.rows) if (!tr.hidden) shown++;
  el.shown.textContent = String(shown);
  el.total.textContent = String(state.rows.length);
  el.waiting.textContent = String(state.waiting.length);
  el.waitingBox.hidden = !state.paused;
  const dropped = state.droppedByService + state.droppedHere;
  el.dropped.textContent = String(dropped);
  el.droppedBox.hidden = dropped === 0;
  el.empty.hidden = state.rows.length > 0;
}

// ---- rows -------------------------------------------------------------------------------------

function rowElement(row: LiveRow): HTMLTableRowElement {
  const tr = document.createElement('tr');
  tr.dataset['id'] = row.id;
  tr.tabIndex = 0;
  const time = new Date(row.timeMs);
  tr.append(
    cell(time.toLocaleTimeString(undefined, { hour12: false }), 'c-time'),
    cell(row.method),
    cell(row.upstream === undefined ? row.path : `${row.path} → ${row.upstream.url}`, 'path'),
    cell(
      row.grpcStatus === undefined ? String(row.status) : `${row.status} ${row.grpcStatus}`,
      `status s-${Math.floor(row.status / 100)}`,
    ),
    cell(String(row.durationMs), 'num'),
  );
  const faults = document.createElement('td');
  faults.className = 'faults';
  for (const fault of row.faults) {
    const tag = document.createElement('span');
    tag.className = 'tag';
    tag.textContent = fault.kind;
    tag.title = faultText(fault);
    faults.append(tag);
  }
  tr.append(faults, cell(row.session ?? '', 'c-session'));
  tr.hidden = !matchesFilter(row, state.filter);
  if (row.id === state.selected) tr.setAttribute('aria-selected', 'true');
  return tr;
}

function show(row: LiveRow): void {
  if (row.seq <= state.lastSeq) return;
  state.lastSeq = row.seq;
  const tr = rowElement(row);
  el.rows.prepend(tr);
  state.rows.push({ row, tr });
  if (state.rows.length > MAX_ROWS) state.rows.shift()?.tr.remove();
}

function receive(row: LiveRow): void {
  if (state.paused) {
    state.waiting.push(row);
    if (state.waiting.length > MAX_WAITING) {
      state.waiting.shift();
      state.droppedHere++;
    }
  } else show(row);
}

el.pause.addEventListener('click', () => {
  state.paused = !state.paused;
  el.pause.setAttribute('aria-pressed', String(state.paused));
  el.pause.textContent = state.paused ? 'Resume' : 'Pause';
  if (!state.paused) {
    for (const row of state.waiting) show(row);
    state.waiting = [];
  }
  updateStats();
});

el.clear.addEventListener('click', () => {
  for (const { tr } of state.rows) tr.remove();
  state.rows = [];
  state.waiting = [];
  updateStats();
});

el.rows.addEventListener('click', (event) => {
  const tr = (event.target as Element).closest('tr');
  if (tr?.dataset['id'] !== undefined) void openDetail(tr.dataset['id']);
});
el.rows.addEventListener('keydown', (event) => {
  const tr = (event.target as Element).closest('tr');
  if (event.key === 'Enter' && tr?.dataset['id'] !== undefined) void openDetail(tr.dataset['id']);
});

// ---- detail -----------------------------------------------------------------------------------

const detail = {
  title: byId('d-title'),
  error: byId('d-error'),
  facts: byId('d-facts'),
  faults: byId('d-faults'),
  masked: byId('d-masked'),
  headers: byId<HTMLTableElement>('d-headers'),
  bodyNote: byId('d-body-note'),
  body: byId('d-body'),
  curlNote: byId('d-curl-note'),
  curl: byId('d-curl'),
  copy: byId<HTMLButtonElement>('d-copy'),
  copied: byId('d-copied'),
  close: byId<HTMLButtonElement>('d-close'),
  replay: byId<HTMLButtonElement>('d-replay'),
};
/** The entry the detail shows, once read: what its replay starts from. */
let shown: DetailEntry | undefined;

function select(id: string | undefined): void {
  state.selected = id;
  for (const { row, tr } of state.rows) {
    if (row.id === id) tr.setAttribute('aria-selected', 'true');
    else tr.removeAttribute('aria-selected');
  }
}

function fact(name: string, value: string): void {
  const dt = document.createElement('dt');
  dt.textContent = name;
  const dd = document.createElement('dd');
  dd.textContent = value;
  detail.facts.append(dt, dd);
}

async function openDetail(id: string): Promise<void> {
  select(id);
  el.detail.hidden = false;
  detail.title.textContent = id;
  detail.error.textContent = '';
  for (const part of [detail.facts, detail.faults, detail.headers.tBodies[0]!, detail.body, detail.curl]) {
    part.replaceChildren();
  }
  for (const note of [detail.masked, detail.bodyNote, detail.curlNote, detail.copied]) note.textContent = '';
  shown = undefined;
  detail.replay.disabled = true;
  const res = await apiFetch(`console/api/entries/${encodeURIComponent(id)}`);
  if (res === undefined) return;
  if (state.selected !== id) return;
  if (!res.ok) {
    detail.error.textContent =
      res.status === 404 ? 'This request is no longer in history.' : `The service answered ${res.status}.`;
    return;
  }
  renderDetail((await res.json()) as DetailEntry);
}

function renderDetail(entry: DetailEntry): void {
  shown = entry;
  detail.replay.disabled = false;
  detail.title.textContent = `${entry.method} ${entry.url}`;
  fact('id', entry.id);
  fact('time', entry.timestamp);
  fact(
    'status',
    entry.grpc === undefined ? String(entry.status) : `${entry.status} (gRPC ${entry.grpc.status})`,
  );
  fact('duration', `${entry.duration_ms} ms`);
  fact('protocol', entry.protocol);
  fact('client', entry.remote_addr);
  if (entry.upstream !== undefined) {
    const upstream = entry.upstream;
    fact('upstream', `${upstream.url}: ${upstream.error ?? upstream.status} in ${upstream.duration_ms} ms`);
  }
  if (entry.faults.length === 0) {
    const li = document.createElement('li');
    li.className = 'muted';
    li.textContent = 'none';
    detail.faults.append(li);
  }
  for (const fault of entry.faults) {
    const li = document.createElement('li');
    li.textContent = `${faultText(fault)}, from ${fault.source}`;
    detail.faults.append(li);
  }
  const tbody = detail.headers.tBodies[0]!;
  let masked = 0;
  for (const [name, value] of Object.entries(entry.headers)) {
    for (const item of value === undefined ? [] : typeof value === 'string' ? [value] : value) {
      if (item.includes('[MASKED]')) masked++;
      const tr = document.createElement('tr');
      tr.append(cell(name), cell(item));
      tbody.append(tr);
    }
  }
  detail.masked.textContent = masked > 0 ? `(${masked} masked, as in history)` : '';
  if (entry.body_size === 0) detail.bodyNote.textContent = '(none)';
  else {
    const notes = [`${entry.body_size} bytes`];
    if (entry.body_encoding === 'base64') notes.push('binary, shown as base64');
    if (entry.body_truncated) notes.push('cut at ECHO_HISTORY_MAX_BODY');
    if (entry.body.length > BODY_PREVIEW_CHARS) notes.push(`first ${BODY_PREVIEW_CHARS} characters`);
    detail.bodyNote.textContent = `(${notes.join(', ')})`;
    detail.body.textContent = entry.body.slice(0, BODY_PREVIEW_CHARS);
  }
  if (entry.protocol === 'gRPC') {
    detail.curlNote.textContent = '(a gRPC call: replay it with POST /replay)';
    detail.copy.disabled = true;
    return;
  }
  const curl = curlCommand(entry, location.origin);
  const notes: string[] = [];
  if (curl.masked.length > 0) notes.push(`left out, masked: ${curl.masked.join(', ')}`);
  if (curl.truncated) notes.push('the body was cut: only what history kept is sent');
  detail.curlNote.textContent = notes.length > 0 ? `(${notes.join('; ')})` : '';
  detail.curl.textContent = curl.command;
  detail.copy.disabled = false;
}

detail.replay.addEventListener('click', () => {
  if (shown !== undefined) openReplay(shown);
});

detail.close.addEventListener('click', () => {
  el.detail.hidden = true;
  select(undefined);
});

detail.copy.addEventListener('click', async () => {
  const text = detail.curl.textContent ?? '';
  try {
    // The clipboard needs a secure context (https, localhost); elsewhere the text is selected.
    await navigator.clipboard.writeText(text);
    detail.copied.textContent = 'copied';
  } catch {
    getSelection()?.selectAllChildren(detail.curl);
    detail.copied.textContent = 'selected: copy it with Ctrl+C';
  }
});

// ---- the service ------------------------------------------------------------------------------

whenRefused((message) => lock(message));

function setConn(kind: 'connecting' | 'open' | 'closed' | 'locked', text: string = kind): void {
  el.conn.dataset['state'] = kind;
  el.conn.textContent = text;
}

function lock(message: string): void {
  stopFaults();
  live?.abort();
  live = undefined;
  setConn('locked', 'token needed');
  el.main.hidden = true;
  el.login.hidden = false;
  el.forget.hidden = true;
  el.loginError.textContent = message;
  el.token.focus();
}

el.login.addEventListener('submit', (event) => {
  event.preventDefault();
  const value = el.token.value.trim();
  if (value === '') return;
  sessionStorage.setItem(TOKEN_KEY, value);
  el.token.value = '';
  el.login.hidden = true;
  void connect();
});

el.forget.addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  lock('');
});

let live: AbortController | undefined;
let retryMs = RETRY_MIN_MS;

function handle(event: string, data: string): void {
  if (event === 'row') receive(JSON.parse(data) as LiveRow);
  else if (event === 'point') chartPoint(JSON.parse(data) as ChartPoint);
  else if (event === 'points') chartPoints(JSON.parse(data) as ChartPoint[]);
  else if (event === 'dropped') state.droppedByService = (JSON.parse(data) as { dropped: number }).dropped;
  else if (event === 'hello') {
    const hello = JSON.parse(data) as { historySize: number; masked: boolean };
    el.notice.hidden = hello.historySize > 0;
    el.notice.textContent =
      'History is off (ECHO_HISTORY_SIZE=0): the service records no request, so the log stays empty.';
  } else if (event === 'close') setConn('closed', 'server draining');
}

/** Opens the live log and keeps it open (again after a break, waiting longer each time). */
async function connect(): Promise<void> {
  live?.abort();
  const controller = new AbortController();
  live = controller;
  setConn('connecting');
  try {
    const res = await apiFetch('console/api/live', { signal: controller.signal });
    if (res === undefined) return;
    if (!res.ok || res.body === null) throw new TypeError(`the live log answered ${res.status}`);
    el.login.hidden = true;
    el.main.hidden = false;
    el.forget.hidden = token() === null;
    setConn('open', 'live');
    startFaults();
    retryMs = RETRY_MIN_MS;
    const parser = new SseParser();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const event of parser.push(value)) handle(event.event, event.data);
      updateStats();
    }
  } catch {
    if (controller.signal.aborted) return;
  }
  if (live !== controller) return;
  if (el.conn.dataset['state'] !== 'closed') setConn('closed', 'reconnecting');
  setTimeout(() => {
    if (live === controller) void connect();
  }, retryMs);
  retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
}

// The tabs: one panel shown at a time; the scenarios are read when their tab opens.
const tabs = [...document.querySelectorAll<HTMLButtonElement>('.tabs [data-tab]')];
for (const tab of tabs) {
  tab.addEventListener('click', () => {
    for (const other of tabs) {
      other.setAttribute('aria-selected', String(other === tab));
      byId(other.dataset['tab'] ?? '').hidden = other !== tab;
    }
    if (tab.dataset['tab'] === 'tab-scenarios') void loadScenarios();
    if (tab.dataset['tab'] === 'tab-charts') showCharts();
  });
}

// A dialog's cancel button closes it (no form: the page's policy allows no form action).
for (const button of document.querySelectorAll<HTMLButtonElement>('dialog [data-close]')) {
  button.addEventListener('click', () => button.closest('dialog')?.close());
}

el.example.textContent = `curl ${new URL('/hello', location.origin).href}`;
updateStats();
void connect();
