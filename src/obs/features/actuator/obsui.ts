/**
 * `GET /actuator/obsui`: the snapshot as one self-contained HTML page for people. No script, no
 * CDN, no external resource: the only inline style is allowed by its hash in a strict
 * Content-Security-Policy, and every value is escaped.
 */
import { createHash } from 'node:crypto';
import type { JsonValue } from '../../core/config/config-hash.ts';
import { isMapKey } from '../../core/config/config-keys.ts';
import type { FeatureSnapshot, ObsSnapshot } from '../../core/snapshot.ts';

const STYLE = `
:root{color-scheme:light dark;--fg:#1d2330;--muted:#5b6475;--bg:#f6f7f9;--card:#fff;--line:#dde1e8;--on:#17803d;--off:#8a93a3;--warn:#b45309}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--muted:#9aa3b2;--bg:#12151b;--card:#1b1f27;--line:#2c323d;--on:#4ade80;--off:#6b7280;--warn:#fbbf24}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:20px 28px;border-bottom:1px solid var(--line);background:var(--card)}
h1{margin:0 0 6px;font-size:20px}
h2{font-size:16px;margin:28px 0 10px}
main{padding:0 28px 40px;max-width:1200px}
.facts{display:flex;flex-wrap:wrap;gap:8px 24px;color:var(--muted)}
.facts b{color:var(--fg);font-weight:600}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.mode{display:inline-block;padding:2px 10px;border-radius:999px;font-weight:700;letter-spacing:.03em}
.mode-ENFORCING{background:#dcfce7;color:#14532d}
.mode-DRY_RUN{background:#fef3c7;color:#78350f}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line)}
th,td{text-align:left;vertical-align:top;padding:7px 10px;border-bottom:1px solid var(--line)}
th{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);font-weight:600}
.on{color:var(--on);font-weight:700}
.off{color:var(--off);font-weight:700}
.planned{color:var(--warn);font-weight:700}
.cfg{margin:0;padding:0;list-style:none}
.cfg li{margin:1px 0;word-break:break-word}
.cfg .k{color:var(--muted)}
.muted{color:var(--muted)}
pre{background:var(--card);border:1px solid var(--line);padding:12px;overflow:auto;margin:0}
footer{color:var(--muted);margin-top:28px}
`;

/** The Content-Security-Policy of the page: nothing but its own inline style. */
export const OBSUI_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const e = (value: unknown): string =>
  escapeHtml(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));

/** A JSON value shown compactly: scalars as text, lists comma-separated, maps as `k=v`. */
function scalar(value: JsonValue): string {
  if (value === null) return '<span class="muted">unset</span>';
  if (Array.isArray(value))
    return value.length === 0 ? '<span class="muted">[]</span>' : value.map((v) => e(v)).join(', ');
  if (typeof value === 'object') {
    const entries = Object.entries(value);
    return entries.length === 0
      ? '<span class="muted">{}</span>'
      : entries.map(([k, v]) => `${e(k)}=${e(v)}`).join(', ');
  }
  return e(String(value));
}

/** A feature's settings as `key: value` items, blocks flattened with dots (`enabled-when.path-excludes`). */
function configList(config: JsonValue, path: string, prefix = ''): string[] {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) return [];
  const items: string[] = [];
  for (const [key, value] of Object.entries(config)) {
    if (key === 'enabled' && prefix === '') continue;
    const name = `${prefix}${key}`;
    if (
      value !== null &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      !isMapKey(`${path}.${name}`)
    ) {
      items.push(...configList(value, path, `${name}.`));
    } else {
      items.push(`<li><span class="k">${e(name)}:</span> <span class="mono">${scalar(value)}</span></li>`);
    }
  }
  return items;
}

function featureRow(key: string, feature: FeatureSnapshot): string {
  const state =
    feature.status === 'planned'
      ? '<span class="planned">planned</span>'
      : feature.enabled
        ? '<span class="on">on</span>'
        : '<span class="off">off</span>';
  const byDefault =
    feature.status === 'planned' ? `${feature.default_once_built} (once built)` : feature.default;
  const items = configList(feature.config, `obs.${key}`);
  const cfg =
    items.length === 0 ? '<span class="muted">none</span>' : `<ul class="cfg">${items.join('')}</ul>`;
  return `<tr><td><b>${e(feature.name)}</b><br><code>obs.${e(key)}</code></td><td>${state}</td><td class="muted">${e(byDefault)}</td><td>${cfg}</td></tr>`;
}

/** The live burn of each SLO objective (the `slo` section), as a table; empty without objectives. */
function sloTable(section: JsonValue | undefined): string {
  type Obj = { readonly [k: string]: JsonValue };
  const isObj = (v: JsonValue | undefined): v is Obj =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  const live = isObj(section) ? section.live : undefined;
  const list = isObj(live) ? live.objectives : undefined;
  const objectives: Obj[] = Array.isArray(list) ? list.filter(isObj) : [];
  if (objectives.length === 0) return '';
  const burn = (o: Obj, window: string) => {
    const windows = o.windows as { readonly [k: string]: { readonly [k: string]: JsonValue } } | undefined;
    const w = windows?.[window];
    const rate = w?.burn_rate;
    return typeof rate === 'number'
      ? `${e(rate.toFixed(2))}x <span class="muted">(${e(String(w?.bad_events))} of ${e(String(w?.events))})</span>`
      : '<span class="muted">no events</span>';
  };
  const rows = objectives
    .map(
      (o) =>
        `<tr><td class="mono">${e(String(o.name))}</td><td>${e(String(o.sli))}</td><td>${e(String(o.target))}</td><td>${burn(o, '5m')}</td><td>${burn(o, '1h')}</td><td>${e(String(o.metric_state))}</td></tr>`,
    )
    .join('');
  return `<h2>SLO burn rate (this process, estimated)</h2>
<table id="slo"><thead><tr><th>Objective</th><th>SLI</th><th>Target</th><th>5m</th><th>1h</th><th>Metric</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function row(label: string, value: string): string {
  return `<tr><th scope="row">${e(label)}</th><td class="mono">${value}</td></tr>`;
}

/**
 * Renders the page.
 * @param basePath the actuator base path, for the curl line that flips the mode.
 */
export function renderObsUi(snapshot: ObsSnapshot, basePath: string): string {
  const rt = snapshot.runtime;
  const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
  const offenders =
    rt.cardinality.top_offenders.length === 0
      ? '<tr><td colspan="4" class="muted">no labels recorded yet</td></tr>'
      : rt.cardinality.top_offenders
          .map(
            (o) =>
              `<tr><td class="mono">${e(o.meter)}</td><td class="mono">${e(o.tagKey)}</td><td>${e(String(o.values))}</td><td>${e(String(o.overflowed))}</td></tr>`,
          )
          .join('');
  const sections = Object.entries(snapshot.sections)
    .map(
      ([name, value]) =>
        `<h2>${e(name)}</h2><pre>${escapeHtml(JSON.stringify(value, null, 2) ?? 'null')}</pre>`,
    )
    .join('');
  const other = snapshot.mode === 'ENFORCING' ? 'DRY_RUN' : 'ENFORCING';
  const profile =
    snapshot.profile.name === null
      ? 'none'
      : `${snapshot.profile.name} (${snapshot.profile.applied ? 'applied' : 'not applied: auto-apply is off'})`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>obs · ${e(snapshot.service)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>obs · ${e(snapshot.service)}</h1>
<div class="facts">
<span>mode <span class="mode mode-${e(snapshot.mode)}" id="mode">${e(snapshot.mode)}</span></span>
<span>version <b>${e(snapshot.version)}</b></span>
<span>config hash <b class="mono" title="${e(snapshot.config_hash)}">${e(snapshot.config_hash.slice(0, 12))}</b></span>
<span>profile <b>${e(profile)}</b></span>
<span>config file <b class="mono">${e(snapshot.config_file ?? 'none')}</b></span>
</div>
</header>
<main>
<h2>Features</h2>
<table id="features">
<thead><tr><th>Feature</th><th>State</th><th>Default</th><th>Effective configuration</th></tr></thead>
<tbody>${Object.entries(snapshot.features)
    .map(([key, f]) => featureRow(key, f))
    .join('')}</tbody>
</table>
<p class="muted" id="planned-note">A planned feature has no code yet and does nothing; setting one of its keys stops startup, except the keys shown with it, which built features read already.</p>
<h2>What DRY_RUN changes${snapshot.dry_run.active ? ' (this process is in DRY_RUN)' : ''}</h2>
<table id="dry-run">
<thead><tr><th>Setting</th><th>ENFORCING</th><th>DRY_RUN</th><th>On here</th></tr></thead>
<tbody>${snapshot.dry_run.changes
    .map(
      (c) =>
        `<tr><td class="mono">${e(c.setting)}</td><td>${e(c.enforcing)}</td><td>${e(c.dry_run)}</td><td>${c.applies ? 'yes' : 'no'}</td></tr>`,
    )
    .join('')}</tbody>
</table>
<p class="muted">Nothing else depends on the mode: stamping, counting, metrics and logs behave the same in both.</p>
<h2>Runtime</h2>
<table id="runtime"><tbody>
${row('uptime', `${e(String(rt.uptime_seconds))} s (since ${e(rt.started_at)})`)}
${row('in-flight requests', e(String(rt.in_flight_requests)))}
${row('event-loop lag', `mean ${e(String(rt.event_loop_lag_ms.mean))} ms, p99 ${e(String(rt.event_loop_lag_ms.p99))} ms, max ${e(String(rt.event_loop_lag_ms.max))} ms`)}
${row('memory', `rss ${mb(rt.memory.rss_bytes)}, heap ${mb(rt.memory.heap_used_bytes)} of ${mb(rt.memory.heap_total_bytes)}`)}
${row('drain', `${e(rt.drain.state)} since ${e(rt.drain.since)}`)}
${row('process', `pid ${e(String(rt.pid))}, node ${e(rt.node_version)}`)}
</tbody></table>
<h2>Cardinality: top offenders (cap ${e(String(rt.cardinality.max_values_per_tag))}, overflow value ${e(rt.cardinality.overflow_value)})</h2>
<table id="offenders"><thead><tr><th>Meter</th><th>Label</th><th>Distinct values</th><th>Overflowed</th></tr></thead><tbody>${offenders}</tbody></table>
${sloTable(snapshot.sections.slo)}
${sections}
<footer>
<p>Generated ${e(snapshot.generated_at)}. JSON: <code>${e(basePath)}/obs</code>. The mode is in memory and per process; to switch this process to ${e(other)}:</p>
<pre>curl -X POST -H 'Content-Type: application/json' -d '{"value":"${e(other)}"}' http://HOST${e(basePath)}/obs/enforcement</pre>
</footer>
</main>
</body>
</html>
`;
}
