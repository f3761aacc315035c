/**
 * Where each scenario stands, in the scenarios tab: for the requests without a session or for one
 * session (the sessions this process keeps, most recently used first), each scenario's position,
 * what it served, its window (`activeFor`'s end, `times` left, expired), with a reset of one
 * scenario or of all, for everyone or for the session shown. Read from `GET /scenario/state`,
 * reset with `POST /scenario/reset`.
 */
import type { ScenarioState } from '../../../../scenario/state.ts';
import { apiFetch, apiSend, errorText } from './api.ts';
import { byId, cell, element } from './dom.ts';

/** A row of `GET /scenario/state`: the type the service writes. */
type StateRow = ScenarioState;

const el = {
  rows: byId<HTMLTableSectionElement>('s-state-rows'),
  session: byId<HTMLSelectElement>('s-session'),
  sessions: byId('s-sessions'),
  reset: byId<HTMLButtonElement>('s-reset'),
  status: byId('s-status'),
  error: byId('s-error'),
};

/** The session shown; undefined: the requests without one. */
function session(): string | undefined {
  return el.session.value === '' ? undefined : el.session.value;
}

function positionText(s: StateRow): string {
  const parts = [String(s.position)];
  if (s.order === 'random') parts.push('drawn');
  if (s.positionServed > 0) parts.push(`served ${s.positionServed}× in this run`);
  if (!s.cycle) parts.push('no cycle');
  return parts.length === 1 ? parts[0]! : `${parts[0]} (${parts.slice(1).join(', ')})`;
}

function windowText(s: StateRow): string {
  const parts: string[] = [];
  if (s.expired) parts.push('expired');
  if (s.activeUntil !== undefined) {
    const until = new Date(s.activeUntil);
    parts.push(`${s.expired ? 'ended' : 'until'} ${until.toLocaleTimeString(undefined, { hour12: false })}`);
  }
  if (s.remaining !== undefined) parts.push(`${s.remaining} left`);
  return parts.join(', ');
}

/** The label a row is reset by: its name, else its path (which resets each scenario of that path). */
function selector(s: StateRow): { name: string } | { path: string } {
  return s.name !== undefined ? { name: s.name } : { path: s.path ?? s.pathPattern ?? '' };
}

async function reset(body: Record<string, unknown>, done: string): Promise<void> {
  const who = session();
  const res = await apiSend('scenario/reset', 'POST', who === undefined ? body : { ...body, session: who });
  if (res === undefined) return;
  if (!res.ok) {
    el.error.textContent = await errorText(res);
    return;
  }
  el.status.textContent = who === undefined ? done : `${done} (session ${who})`;
  await loadState();
}

function row(s: StateRow): HTMLTableRowElement {
  const tr = element('tr');
  tr.dataset['index'] = String(s.index);
  if (s.expired) tr.className = 'expired';
  const button = element('button', 'link', 'Reset');
  button.type = 'button';
  button.title =
    s.name === undefined ? 'Start every scenario of this path again' : 'Start this scenario again';
  button.addEventListener(
    'click',
    () => void reset(selector(s), `${s.name ?? s.path ?? s.pathPattern} starts again`),
  );
  const actions = element('td');
  actions.append(button);
  tr.append(
    cell(String(s.index)),
    cell(s.name ?? s.path ?? s.pathPattern ?? ''),
    cell(positionText(s)),
    cell(
      s.served === undefined || s.served.length < 2
        ? String(s.total)
        : `${s.total} (${s.served.join(' · ')})`,
    ),
    cell(windowText(s)),
    actions,
  );
  return tr;
}

async function loadSessions(): Promise<void> {
  const res = await apiFetch('console/api/sessions');
  if (res === undefined || !res.ok) return;
  const { count, ids } = (await res.json()) as { count: number; ids: string[] };
  const chosen = el.session.value;
  const options = [new Option('requests without a session', '')];
  for (const id of ids) options.push(new Option(`session ${id}`, id));
  // A session chosen that is gone (reset, evicted) stays listed: its state reads as fresh.
  if (chosen !== '' && !ids.includes(chosen)) options.push(new Option(`session ${chosen}`, chosen));
  el.session.replaceChildren(...options);
  el.session.value = chosen;
  el.sessions.textContent =
    `${count} session${count === 1 ? '' : 's'} with a place of their own` +
    (count > ids.length ? `, the ${ids.length} most recently used listed` : '');
}

/** Reads where each scenario stands, for the session chosen, and the sessions there are. */
export async function loadState(): Promise<void> {
  await loadSessions();
  const who = session();
  const res = await apiFetch(
    who === undefined ? 'scenario/state' : `scenario/state?session=${encodeURIComponent(who)}`,
  );
  if (res === undefined) return;
  if (!res.ok) {
    el.error.textContent = await errorText(res);
    return;
  }
  const { scenarios } = (await res.json()) as { scenarios: StateRow[] };
  el.rows.replaceChildren(...scenarios.map(row));
}

el.session.addEventListener('change', () => void loadState());
el.reset.addEventListener('click', () => void reset({}, 'every scenario starts again'));
