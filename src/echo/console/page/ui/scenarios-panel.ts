/**
 * The scenarios tab: the set as YAML in an editor checked on the service (each problem on its
 * line), saved with `If-Match` (a set changed since it was read is a 412, shown, never
 * overwritten), and where each scenario stands (state-panel.ts).
 */
import { apiFetch, apiSend } from './api.ts';
import { byId, element } from './dom.ts';
import { loadState } from './state-panel.ts';

interface Problem {
  readonly field: string;
  readonly message: string;
  readonly line?: number;
}

const el = {
  yaml: byId<HTMLTextAreaElement>('s-yaml'),
  gutter: byId('s-gutter'),
  reload: byId<HTMLButtonElement>('s-reload'),
  check: byId<HTMLButtonElement>('s-check'),
  save: byId<HTMLButtonElement>('s-save'),
  etag: byId('s-etag'),
  status: byId('s-status'),
  error: byId('s-error'),
  problems: byId('s-problems'),
};

/** The ETag of the set the editor was loaded from: what a save sends in `If-Match`. */
let etag: string | undefined;
let badLines = new Map<number, string>();

function drawGutter(): void {
  const count = el.yaml.value.split('\n').length;
  const numbers: HTMLElement[] = [];
  for (let line = 1; line <= count; line++) {
    const span = element('span', badLines.has(line) ? 'bad' : undefined, `${line}\n`);
    span.dataset['line'] = String(line);
    const message = badLines.get(line);
    if (message !== undefined) span.title = message;
    numbers.push(span);
  }
  el.gutter.replaceChildren(...numbers);
  el.gutter.scrollTop = el.yaml.scrollTop;
}

function showProblems(problems: readonly Problem[]): void {
  badLines = new Map();
  el.problems.replaceChildren();
  for (const problem of problems) {
    const line = problem.line ?? 1;
    badLines.set(line, badLines.has(line) ? `${badLines.get(line)}; ${problem.message}` : problem.message);
    const li = element('li');
    const go = element('button', 'link', `line ${line}`);
    go.type = 'button';
    go.dataset['line'] = String(line);
    go.addEventListener('click', () => selectLine(line));
    li.append(go, document.createTextNode(`: ${problem.message}`));
    el.problems.append(li);
  }
  drawGutter();
}

/** Puts the caret on `line` and shows it. */
function selectLine(line: number): void {
  const lines = el.yaml.value.split('\n');
  const start = lines.slice(0, line - 1).reduce((sum, text) => sum + text.length + 1, 0);
  el.yaml.focus();
  el.yaml.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
}

async function failed(res: Response): Promise<void> {
  const body = (await res.json().catch(() => ({}))) as { error?: { message?: string; details?: Problem[] } };
  if (body.error?.details !== undefined && res.status === 400) {
    el.error.textContent = 'The set is not valid: nothing was saved.';
    showProblems(body.error.details);
  } else el.error.textContent = body.error?.message ?? `the service answered ${res.status}`;
}

/** Reads the set (YAML, ETag) into the editor, and where each scenario stands. */
export async function loadScenarios(): Promise<void> {
  el.error.textContent = '';
  const res = await apiFetch('console/api/scenarios');
  if (res === undefined) return;
  if (!res.ok) return failed(res);
  const view = (await res.json()) as { etag: string; count: number; yaml: string };
  etag = view.etag;
  el.yaml.value = view.yaml;
  el.etag.textContent = `${view.count} scenario${view.count === 1 ? '' : 's'}, ETag ${view.etag}`;
  showProblems([]);
  await loadState();
}

/** Checks the editor's text on the service; true when it is a valid set. */
async function check(): Promise<boolean> {
  el.error.textContent = '';
  el.status.textContent = '';
  const res = await apiSend('console/api/scenarios/check', 'POST', { yaml: el.yaml.value });
  if (res === undefined) return false;
  if (!res.ok) {
    await failed(res);
    return false;
  }
  const { count } = (await res.json()) as { count: number };
  showProblems([]);
  el.status.textContent = `valid: ${count} scenario${count === 1 ? '' : 's'}`;
  return true;
}

el.check.addEventListener('click', () => void check());
el.reload.addEventListener('click', () => void loadScenarios());
el.yaml.addEventListener('input', drawGutter);
el.yaml.addEventListener('scroll', () => {
  el.gutter.scrollTop = el.yaml.scrollTop;
});

el.save.addEventListener('click', async () => {
  if (!(await check())) return;
  const res = await apiFetch('scenario', {
    method: 'POST',
    headers: { 'content-type': 'application/yaml', 'if-match': etag ?? '*' },
    body: el.yaml.value,
  });
  if (res === undefined) return;
  if (res.status === 412) {
    el.status.textContent = '';
    el.error.textContent =
      'The set changed since you loaded it (another tab, the operator): nothing was saved. Copy your text, then Reload.';
    return;
  }
  if (!res.ok) return failed(res);
  await loadScenarios();
  el.status.textContent = 'saved';
});
