/**
 * "Which scenario matches this request?" in the scenarios tab: a request described (method, path
 * with its query, headers, body) and sent to `POST /console/api/scenarios/match`, which answers
 * from the stored set without moving anything; the page lists each scenario with what it would do.
 */
import { apiSend, errorText } from './api.ts';
import { byId, element } from './dom.ts';
import { parseHeaders } from './replay-panel.ts';

interface Peeked {
  readonly index: number;
  readonly label: string;
  readonly outcome: 'answers' | 'shadowed' | 'expired' | 'no-match';
  readonly reason?: { readonly field: string; readonly message: string };
  readonly response?: number | null;
  readonly status?: number;
}

interface DryRun {
  readonly answer: number | null;
  readonly scenarios: readonly Peeked[];
  readonly omitted: number;
  readonly faultsEnabled: boolean;
  readonly request: { readonly session?: string };
}

const el = {
  method: byId<HTMLInputElement>('m-method'),
  path: byId<HTMLInputElement>('m-path'),
  headers: byId<HTMLTextAreaElement>('m-headers'),
  body: byId<HTMLTextAreaElement>('m-body'),
  try: byId<HTMLButtonElement>('m-try'),
  answer: byId('m-answer'),
  error: byId('m-error'),
  result: byId('m-result'),
};

function outcomeText(s: Peeked): string {
  if (s.outcome === 'answers') {
    const response =
      s.response === null || s.response === undefined
        ? 'a response drawn at random'
        : `response ${s.response}${s.status === undefined ? '' : ` (${s.status})`}`;
    return `answers, with ${response}`;
  }
  if (s.outcome === 'shadowed') return 'matches too, but an earlier scenario answers first';
  return s.reason?.message ?? s.outcome;
}

function render(run: DryRun): void {
  const winner = run.scenarios.find((s) => s.index === run.answer);
  const who = run.request.session === undefined ? '' : ` for session ${run.request.session}`;
  el.answer.dataset['answer'] = run.answer === null ? '' : String(run.answer);
  el.answer.textContent =
    winner === undefined
      ? `No scenario answers this request${who}: the echo answers it.`
      : `#${winner.index} ${winner.label} answers this request${who}.` +
        (run.faultsEnabled ? '' : ' Faults are off, so it is matched but not applied.');
  el.result.replaceChildren(
    ...run.scenarios.map((s) => {
      const li = element('li', `m-${s.outcome}`);
      li.dataset['outcome'] = s.outcome;
      li.append(
        element('b', undefined, `#${s.index} ${s.label}`),
        document.createTextNode(`: ${outcomeText(s)}`),
      );
      return li;
    }),
  );
  if (run.omitted > 0) el.result.append(element('li', 'muted', `${run.omitted} more not listed`));
}

async function tryRequest(): Promise<void> {
  el.error.textContent = '';
  let headers: Record<string, string>;
  try {
    headers = parseHeaders(el.headers.value);
  } catch (err) {
    el.error.textContent = (err as Error).message;
    return;
  }
  const body = {
    method: el.method.value.trim() || 'GET',
    path: el.path.value.trim(),
    headers,
    ...(el.body.value === '' ? {} : { body: el.body.value }),
  };
  const res = await apiSend('console/api/scenarios/match', 'POST', body);
  if (res === undefined) return;
  if (!res.ok) {
    el.error.textContent = await errorText(res);
    el.result.replaceChildren();
    el.answer.textContent = '';
    return;
  }
  render((await res.json()) as DryRun);
}

el.try.addEventListener('click', () => void tryRequest());
el.path.addEventListener('keydown', (event) => {
  if (event.key === 'Enter') void tryRequest();
});
