/**
 * Replay from the log: a request re-sent with edits (headers, body, target) through
 * `POST /replay`, beside the same request re-sent as recorded, the two answers side by side with
 * the lines that differ marked. Either answer can become a scenario (appended to the set with
 * `If-Match`, so a set changed meanwhile is not overwritten).
 */
import { lineDiff } from '../line-diff.ts';
import { apiFetch, apiSend, errorText } from './api.ts';
import { byId, element } from './dom.ts';

/** What the replay needs of a history entry (`GET /console/api/entries/<id>`). */
export interface ReplaySource {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly body: string;
  readonly body_encoding: 'utf8' | 'base64';
  readonly body_truncated: boolean;
}

/** Characters of an answer read and shown; the rest is cut (and said). */
const MAX_ANSWER_CHARS = 256 * 1024;

interface Answer {
  readonly status: number;
  readonly contentType: string;
  /** As shown and compared: JSON indented, anything else as it came. */
  readonly body: string;
  /** As it came: what a scenario made of this answer sends. */
  readonly raw: string;
  readonly cut: boolean;
}

const el = {
  dialog: byId<HTMLDialogElement>('replay'),
  title: byId('r-title'),
  target: byId<HTMLInputElement>('r-target'),
  headers: byId<HTMLTextAreaElement>('r-headers'),
  body: byId<HTMLTextAreaElement>('r-body'),
  bodyNote: byId('r-body-note'),
  send: byId<HTMLButtonElement>('r-send'),
  error: byId('r-error'),
  results: byId('r-results'),
  saved: byId('r-saved'),
};

let source: ReplaySource | undefined;
let answers: { original: Answer; edited: Answer } | undefined;

export function openReplay(entry: ReplaySource): void {
  source = entry;
  answers = undefined;
  el.title.textContent = `Replay ${entry.method} ${entry.path}`;
  el.target.value = '';
  el.headers.value = '';
  const editable = entry.body_encoding === 'utf8' && !entry.body_truncated;
  el.body.value = editable ? entry.body : '';
  el.body.placeholder = editable ? '' : 'binary or cut body: sent as recorded unless you type one';
  el.bodyNote.textContent = editable ? '' : '(the recorded body is sent unless you write one)';
  el.body.dataset['recorded'] = editable ? entry.body : '';
  el.error.textContent = '';
  el.saved.textContent = '';
  el.results.replaceChildren();
  el.dialog.showModal();
}

/** `Name: value` lines as `modify_headers`; a line without a colon is refused, naming it. */
export function parseHeaders(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [n, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new TypeError(`header line ${n + 1} is not "Name: value"`);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}

async function readAnswer(res: Response): Promise<Answer> {
  const text = await res.text();
  const raw = text.slice(0, MAX_ANSWER_CHARS);
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    body: pretty(raw),
    raw,
    cut: text.length > MAX_ANSWER_CHARS,
  };
}

/** JSON indented (line by line is how the two are compared), anything else as it came. */
function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

async function replay(body: Record<string, unknown>): Promise<Answer | undefined> {
  const res = await apiSend('replay', 'POST', body);
  if (res === undefined) return undefined;
  // The service's own refusals (a bad header, a target not allowed) are not answers of the target.
  if (!res.ok && res.headers.get('x-echo-replay-of') === null) {
    throw new TypeError(await errorText(res));
  }
  return readAnswer(res);
}

el.send.addEventListener('click', async () => {
  if (source === undefined) return;
  el.error.textContent = '';
  el.saved.textContent = '';
  const edited: Record<string, unknown> = { id: source.id };
  try {
    const headers = parseHeaders(el.headers.value);
    if (Object.keys(headers).length > 0) edited['modify_headers'] = headers;
    if (el.body.value !== el.body.dataset['recorded']) edited['modify_body'] = el.body.value;
    if (el.target.value.trim() !== '') edited['target'] = el.target.value.trim();
    el.send.disabled = true;
    const original = await replay({ id: source.id });
    const changed = await replay(edited);
    if (original === undefined || changed === undefined) return;
    answers = { original, edited: changed };
    render(original, changed);
  } catch (error) {
    el.error.textContent = (error as Error).message;
  } finally {
    el.send.disabled = false;
  }
});

function column(which: 'original' | 'edited', answer: Answer, changed: readonly boolean[], other: Answer) {
  const box = element('section', `r-answer r-${which}`);
  box.append(element('h3', undefined, which === 'original' ? 'As recorded' : 'With your edits'));
  const status = element('p', `r-status s-${Math.floor(answer.status / 100)}`, String(answer.status));
  if (answer.status !== other.status) status.classList.add('differs');
  box.append(status, element('p', 'muted r-type', answer.contentType || '(no content type)'));
  const pre = element('pre', 'r-body');
  for (const [i, line] of answer.body.split('\n').entries()) {
    const span = element('span', changed[i] ? 'line differs' : 'line', `${line}\n`);
    pre.append(span);
  }
  box.append(pre);
  if (answer.cut) box.append(element('p', 'muted', `(first ${MAX_ANSWER_CHARS} characters)`));
  const save = element('button', 'r-save', 'Save as scenario');
  save.type = 'button';
  save.addEventListener('click', () => void saveAsScenario(which));
  box.append(save);
  return box;
}

function render(original: Answer, edited: Answer): void {
  const diff = lineDiff(original.body, edited.body);
  el.results.replaceChildren(
    column('original', original, diff.left, edited),
    column('edited', edited, diff.right, original),
  );
}

/** Appends a scenario answering the request's method and path as `which` answered. */
async function saveAsScenario(which: 'original' | 'edited'): Promise<void> {
  const answer = answers?.[which];
  if (source === undefined || answer === undefined) return;
  el.saved.textContent = '';
  el.error.textContent = '';
  if (answer.cut) {
    el.error.textContent = `The answer is longer than ${MAX_ANSWER_CHARS} characters: only its start was read, so it was not saved.`;
    return;
  }
  const read = await apiFetch('scenario');
  if (read === undefined) return;
  if (!read.ok) {
    el.error.textContent = await errorText(read);
    return;
  }
  const etag = read.headers.get('etag') ?? '*';
  const set = (await read.json()) as Array<Record<string, unknown>>;
  const names = new Set(set.map((s) => s['name']));
  let name = `replay-${source.id.slice(0, 8)}`;
  for (let n = 2; names.has(name); n++) name = `replay-${source.id.slice(0, 8)}-${n}`;
  // The body as it came, not as shown: the scenario answers byte for byte as the target did.
  const response: Record<string, unknown> = { status: answer.status, body: answer.raw };
  if (answer.contentType !== '') response['headers'] = { 'content-type': answer.contentType };
  set.push({ name, method: source.method, path: source.path, responses: [response] });
  const res = await apiSend('scenario', 'POST', set, { 'if-match': etag });
  if (res === undefined) return;
  if (!res.ok) {
    el.error.textContent = await errorText(res);
    return;
  }
  el.saved.textContent = `saved as scenario "${name}"`;
}
