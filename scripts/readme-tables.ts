/**
 * Generates the reference tables of environment variables, error codes and controls from the code,
 * so they cannot drift: the docs site's docs/service/configuration.md (echo's variables),
 * docs/service/errors.md (echo's errors, the scenario errors), docs/service/control-headers.md and
 * docs/service/grpc.md (the control headers and the gRPC metadata keys, both from
 * src/echo/control-catalogue.ts) and src/operator/README.md (the operator's errors).
 * `npm run gen:readme` (`node scripts/readme-tables.ts --write`) rewrites them;
 * `test/readme.integration.test.ts` and `test/operator/readme.test.ts` fail when a checked-in page
 * differs from what this produces. (obs's tables have their own generator, src/obs/config-doc.ts.)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { settingsTable } from '@echo-chaos/obs/internal';
import { FAULT_DEFAULT_VARIABLES, HEADER_VARIABLE, VARIABLES } from '../src/echo/config.ts';
import { headerRows, metadataRows, type Row } from '../src/echo/control-catalogue.ts';
import { ECHO_ERRORS } from '../src/echo/errors.ts';
import { OPERATOR_SETTINGS } from '../src/operator/config.ts';
import { OPERATOR_ERRORS } from '../src/operator/errors.ts';
import { SCENARIO_ERRORS } from '../src/scenario/errors.ts';
import { OTEL_VARIABLES } from '../src/telemetry/otel-config.ts';

const esc = (s: string) => s.replaceAll('|', '\\|');
const code = (s: string) => (s === '' ? '(empty)' : `\`${s}\``);

export function variablesTable(): string {
  const rows: string[] = [];
  for (const v of VARIABLES) {
    rows.push(`| \`${v.name}\` | ${esc(v.meaning)} | ${code(v.default)} | ${esc(v.form)} |`);
    // The other control headers' defaults follow ECHO_DELAY's (src/echo/config.ts).
    if (v.name === 'ECHO_DELAY') {
      for (const f of FAULT_DEFAULT_VARIABLES)
        rows.push(`| \`${f.name}\` | ${esc(f.meaning)} | (empty) | ${esc(f.form)} |`);
    }
  }
  rows.push(
    `| \`${HEADER_VARIABLE.name}\` | ${HEADER_VARIABLE.meaning} | ${HEADER_VARIABLE.default} | ${esc(HEADER_VARIABLE.form)} |`,
  );
  // The standard OpenTelemetry variables the service honours (src/telemetry/otel-config.ts).
  for (const v of OTEL_VARIABLES)
    rows.push(`| \`${v.name}\` | ${esc(v.meaning)} | ${v.default} | ${esc(v.form)} |`);
  return ['| Variable | Meaning | Default | Accepted form |', '|---|---|---|---|', ...rows].join('\n');
}

/** One row per code of an error catalogue: code, HTTP status, when. */
function catalogueTable(
  catalogue: Readonly<Record<string, { readonly status: number; readonly when: string }>>,
): string {
  const rows = Object.entries(catalogue).map(([c, e]) => `| \`${c}\` | ${e.status} | ${esc(e.when)} |`);
  return ['| Code | Status | When |', '|---|---|---|', ...rows].join('\n');
}

/** A table of the control catalogue: the header or key in code, what it does, what it takes. */
function controlTable(heading: string, rows: readonly Row[]): string {
  const lines = rows.map((r) => `| \`${r.name}\` | ${esc(r.what)} | ${esc(r.form)} |`);
  return [heading, '|---|---|---|', ...lines].join('\n');
}

type Sections = Readonly<Record<string, () => string>>;

/** Each file holding generated tables (repository-relative), with the tables it holds. */
export const GENERATED_PAGES: Readonly<Record<string, Sections>> = {
  'docs/service/configuration.md': { variables: variablesTable },
  'docs/service/errors.md': {
    errors: () => catalogueTable(ECHO_ERRORS),
    'scenario-errors': () => catalogueTable(SCENARIO_ERRORS),
  },
  'docs/service/control-headers.md': {
    'control-headers': () => controlTable('| Header | Effect | Value |', headerRows()),
  },
  'docs/service/grpc.md': {
    'grpc-metadata': () => controlTable('| Key | What it does to a call | Accepted form |', metadataRows()),
  },
  'src/operator/README.md': {
    'operator-settings': () => settingsTable(OPERATOR_SETTINGS),
    'operator-errors': () => catalogueTable(OPERATOR_ERRORS),
  },
};

function renderSections(text: string, sections: Sections, file: string): string {
  let out = text;
  for (const [name, render] of Object.entries(sections)) {
    const begin = `<!-- generated:${name} (by scripts/readme-tables.ts, do not edit) -->`;
    const end = `<!-- /generated:${name} -->`;
    const start = out.indexOf(begin);
    const stop = out.indexOf(end);
    if (start === -1 || stop === -1) throw new Error(`${file} lacks the markers of section ${name}`);
    out = `${out.slice(0, start + begin.length)}\n${render()}\n${out.slice(stop)}`;
  }
  return out;
}

/** One of {@link GENERATED_PAGES} with every generated section replaced by freshly generated content. */
export function renderPage(file: string, text: string): string {
  const sections = GENERATED_PAGES[file];
  if (sections === undefined) throw new Error(`${file} holds no table of scripts/readme-tables.ts`);
  return renderSections(text, sections, file);
}

/** src/operator/README.md with its generated section (the error table) replaced by fresh content. */
export function renderOperatorReadme(readme: string): string {
  return renderPage('src/operator/README.md', readme);
}

if (process.argv.includes('--write')) {
  for (const file of Object.keys(GENERATED_PAGES)) {
    const path = new URL(`../${file}`, import.meta.url);
    writeFileSync(path, renderPage(file, readFileSync(path, 'utf8')));
  }
}
