/**
 * The faults panel: what makes the service inject faults now (the environment's defaults, the
 * scenarios), the master switch and the safety valve's use, with a banner while requests that ask
 * for nothing get faults. Turning faults off asks first, in the page's own dialog.
 */
import type { FaultSummary } from '../../api-shapes.ts';
import { apiFetch, apiSend, errorText } from './api.ts';
import { ask, byId, element } from './dom.ts';

/** How often the panel reads the service again while the page is open. */
const REFRESH_MS = 3000;

const el = {
  banner: byId('faults-banner'),
  switchState: byId('fp-switch'),
  active: byId('fp-active'),
  max: byId('fp-max'),
  scenarios: byId('fp-scenarios'),
  defaults: byId('fp-defaults'),
  toggle: byId<HTMLButtonElement>('fp-toggle'),
  error: byId('fp-error'),
  dialog: byId<HTMLDialogElement>('fp-confirm'),
  confirm: byId<HTMLButtonElement>('fp-confirm-off'),
};

let current: FaultSummary | undefined;

function render(summary: FaultSummary): void {
  current = summary;
  el.switchState.textContent = summary.enabled ? 'on' : 'off';
  el.switchState.dataset['on'] = String(summary.enabled);
  el.active.textContent = String(summary.active);
  el.max.textContent = String(summary.maxActive);
  el.scenarios.textContent = String(summary.scenarios);
  el.defaults.replaceChildren();
  if (summary.defaults.length === 0) el.defaults.append(element('span', 'muted', 'no environment default'));
  for (const { variable, value } of summary.defaults) {
    el.defaults.append(element('code', 'tag', `${variable}=${value}`));
  }
  el.toggle.textContent = summary.enabled ? 'Turn faults off' : 'Turn faults on';
  el.toggle.disabled = false;
  el.banner.hidden = !summary.injecting;
  const causes: string[] = summary.defaults.map((d) => d.variable);
  if (summary.scenarios > 0)
    causes.push(`${summary.scenarios} scenario${summary.scenarios === 1 ? '' : 's'}`);
  el.banner.textContent = `Faults are on: requests get them without asking (${causes.join(', ')}).`;
}

/** Reads the panel's facts again. */
export async function refreshFaults(): Promise<void> {
  const res = await apiFetch('console/api/faults');
  if (res === undefined) return;
  if (!res.ok) {
    el.error.textContent = await errorText(res);
    return;
  }
  el.error.textContent = '';
  render((await res.json()) as FaultSummary);
}

async function setEnabled(enabled: boolean): Promise<void> {
  el.toggle.disabled = true;
  const res = await apiSend('control/faults', 'PUT', { enabled });
  if (res !== undefined && !res.ok) el.error.textContent = await errorText(res);
  await refreshFaults();
}

el.toggle.addEventListener('click', async () => {
  if (current === undefined) return;
  if (!current.enabled) return setEnabled(true);
  if (await ask(el.dialog, el.confirm)) await setEnabled(false);
});

let timer: ReturnType<typeof setInterval> | undefined;

/** Shows the panel's facts now and every few seconds, until {@link stopFaults}. */
export function startFaults(): void {
  void refreshFaults();
  timer ??= setInterval(() => void refreshFaults(), REFRESH_MS);
}

export function stopFaults(): void {
  clearInterval(timer);
  timer = undefined;
}
