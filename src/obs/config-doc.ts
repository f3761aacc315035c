/**
 * The reference tables of obs (features, keys, error codes) on the docs site's pages
 * (docs/obs/index.md, docs/obs/actuator.md), generated from {@link FEATURES}, {@link OBS_SCHEMA} and
 * {@link OBS_ERRORS} so that they cannot drift. `npm run gen:config-doc`
 * (`node src/obs/config-doc.ts --write`) rewrites the pages' generated sections;
 * `test/obs/config-doc.test.ts` fails when a checked-in page differs from what this produces.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { envVariableOf } from './core/config/config-env.ts';
import {
  type Field,
  type Fields,
  isDuration,
  isGroup,
  isObjectList,
  isStringMap,
} from './core/config/config-fields.ts';
import { OBS_SCHEMA } from './core/config/config-schema.ts';
import { expectedForm } from './core/config/config-values.ts';
import { formatDuration } from './core/duration.ts';
import { OBS_ERRORS } from './core/errors.ts';
import { FEATURES, plannedFeatureOf } from './core/features.ts';

const cell = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ');

function defaultText(field: Field): string {
  if (isGroup(field)) return '';
  const value: unknown = field.default;
  if (value === undefined) return '(unset)';
  if (isDuration(field)) return `\`${formatDuration(Number(value))}\``;
  if (Array.isArray(value)) return value.length === 0 ? '`[]`' : `\`${value.join(', ')}\``;
  if (isStringMap(field)) return '`{}`';
  return `\`${String(value)}\``;
}

/**
 * One row per key a source may set: key, environment variable, default, accepted form, meaning.
 * The keys of planned features are left out, and named in one line below the table.
 */
export function renderConfigTable(): string {
  const rows: string[] = [];
  const walk = (fields: Fields, path: string): void => {
    for (const [key, field] of Object.entries(fields)) {
      const here = `${path}.${key}`;
      if (plannedFeatureOf(here) !== undefined) continue;
      if (isGroup(field)) {
        walk(field.properties, here);
        continue;
      }
      const form = isObjectList(field)
        ? `${expectedForm(field)}; items: ${Object.keys(field.items.properties).join(', ')}`
        : expectedForm(field);
      rows.push(
        `| \`${here}\` | \`${envVariableOf(here)}\` | ${cell(defaultText(field))} | ${cell(form)} | ${cell(field.description ?? '')} |`,
      );
    }
  };
  walk(OBS_SCHEMA.properties, 'obs');
  const planned = FEATURES.filter((f) => f.status === 'planned').map((f) => {
    const built = (f.builtKeys ?? []).map((k) => `\`obs.${f.key}.${k}\``);
    return built.length === 0 ? `\`obs.${f.key}\`` : `\`obs.${f.key}\` but ${built.join(', ')}`;
  });
  return [
    '| Key | Variable | Default | Accepted form | Meaning |',
    '|---|---|---|---|---|',
    ...rows,
    ...(planned.length === 0
      ? []
      : [
          '',
          `Not listed: the keys of the planned features (${planned.join(', ')}), which have no code yet; setting one stops startup. See [Features](#features).`,
        ]),
  ].join('\n');
}

/** One row per feature of the seed's table: name, settings, whether it is built, default. */
export function renderFeatureTable(): string {
  const rows = FEATURES.map((f) => {
    const settings = f.key === 'config-validation' ? '(none)' : `\`obs.${f.key}\``;
    const built = (f.builtKeys ?? []).map((k) => `\`obs.${f.key}.${k}\``);
    const status =
      f.status === 'built'
        ? 'built'
        : `**planned**${built.length === 0 ? '' : ` (${built.join(', ')} is read already)`}`;
    const byDefault = f.status === 'built' ? f.default : `${f.default}, once built`;
    return `| ${cell(f.name)} | ${settings} | ${status} | ${cell(byDefault)} |`;
  });
  return ['| Feature | Settings | Status | Default |', '|---|---|---|---|', ...rows].join('\n');
}

/** One row per error code: code, HTTP status, when. */
export function renderErrorTable(): string {
  const rows = Object.entries(OBS_ERRORS).map(
    ([code, e]) => `| \`${code}\` | ${e.status} | ${cell(e.when)} |`,
  );
  return ['| Code | Status | When |', '|---|---|---|', ...rows].join('\n');
}

const SECTIONS: Readonly<Record<string, () => string>> = {
  'obs-features': renderFeatureTable,
  'obs-config': renderConfigTable,
  'obs-errors': renderErrorTable,
};

/** The pages holding the generated tables (repository-relative), with the sections each holds. */
export const GENERATED_PAGES: Readonly<Record<string, readonly string[]>> = {
  'docs/obs/index.md': ['obs-features', 'obs-config'],
  'docs/obs/actuator.md': ['obs-errors'],
};

/** One of {@link GENERATED_PAGES} with every generated section replaced by fresh content. */
export function renderObsPage(file: string, text: string): string {
  const names = GENERATED_PAGES[file];
  assert.ok(names !== undefined, `${file} holds no table of src/obs/config-doc.ts`);
  let out = text;
  for (const name of names) {
    const begin = `<!-- generated:${name} (by src/obs/config-doc.ts, do not edit) -->`;
    const end = `<!-- /generated:${name} -->`;
    const start = out.indexOf(begin);
    const stop = out.indexOf(end);
    assert.ok(start !== -1 && stop !== -1, `${file} lacks the markers of section ${name}`);
    out = `${out.slice(0, start + begin.length)}\n${SECTIONS[name]!()}\n${out.slice(stop)}`;
  }
  return out;
}

if (import.meta.main && process.argv.includes('--write')) {
  for (const file of Object.keys(GENERATED_PAGES)) {
    const path = new URL(`../../${file}`, import.meta.url);
    writeFileSync(path, renderObsPage(file, readFileSync(path, 'utf8')));
  }
}
