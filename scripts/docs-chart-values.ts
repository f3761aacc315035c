/**
 * Writes the docs site's page of the chart's values, docs/kubernetes/chart-values.md, from
 * charts/echo-chaos/values.yaml (each key, its default and its `# --` comment) and
 * values.schema.json (the type and bounds each value must have).
 *
 *   npx node scripts/docs-chart-values.ts           # prints the page
 *   npm run gen:chart-values   # writes it
 *   npx node scripts/docs-chart-values.ts --check   # exits 1 when the page is stale
 *
 * A row per key that has a comment, or whose value is not a mapping with keys (a scalar, a list,
 * `{}`); the keys of a mapping without a comment get rows of their own. test/docs/site.integration.test.ts
 * fails when the checked-in page is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { ROOT } from './docs-site.ts';

export const CHART_DIR = join(ROOT, 'charts', 'echo-chaos');
export const CHART_VALUES_PAGE = join(ROOT, 'docs', 'kubernetes', 'chart-values.md');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = { [key: string]: Json };

/** The `# --` comment above each key of a values file, by dotted path. */
export function valueComments(yaml: string): Map<string, string> {
  const comments = new Map<string, string>();
  const stack: { indent: number; key: string }[] = [];
  let pending: string[] | undefined;
  for (const line of yaml.split('\n')) {
    const comment = /^\s*#\s?(.*)$/.exec(line);
    if (comment) {
      const text = comment[1]!;
      if (text.startsWith('-- ')) pending = [text.slice(3)];
      else if (pending !== undefined) pending.push(text);
      continue;
    }
    const keyLine = /^(\s*)([A-Za-z0-9_.-]+):(\s|$)/.exec(line);
    if (!keyLine) {
      if (line.trim() === '') pending = undefined;
      continue;
    }
    const indent = keyLine[1]!.length;
    while (stack.length > 0 && stack.at(-1)!.indent >= indent) stack.pop();
    stack.push({ indent, key: keyLine[2]! });
    if (pending !== undefined) comments.set(stack.map((s) => s.key).join('.'), pending.join(' ').trim());
    pending = undefined;
  }
  return comments;
}

const asObject = (v: Json | undefined): Schema =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {};

/** The schema of the value at `path`, following `properties` and local `$ref`s. */
function schemaAt(root: Schema, path: readonly string[]): Schema | undefined {
  const deref = (s: Json | undefined): Schema | undefined => {
    if (s === null || typeof s !== 'object' || Array.isArray(s)) return undefined;
    const ref = s['$ref'];
    if (typeof ref !== 'string') return s;
    const target = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<Json | undefined>(
        (at, part) => (at !== null && typeof at === 'object' && !Array.isArray(at) ? at[part] : undefined),
        root,
      );
    const referenced = deref(target) ?? {};
    const own = Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$ref'));
    // Properties beside a $ref add to the referenced ones.
    const properties = { ...asObject(referenced['properties']), ...asObject(own['properties']) };
    return { ...referenced, ...own, properties };
  };
  let at = deref(root);
  for (const key of path) {
    const props = at?.['properties'];
    at =
      props !== null && typeof props === 'object' && !Array.isArray(props) && key in props
        ? deref(props[key])
        : undefined;
  }
  return at;
}

/** What the schema asks of a value: its type, enumeration and bounds, in a few words. */
export function schemaSummary(schema: Schema | undefined, value: Json): string {
  if (schema === undefined) return Array.isArray(value) ? 'list' : value === null ? 'null' : typeof value;
  const parts: string[] = [];
  const enumeration = schema['enum'];
  if (Array.isArray(enumeration))
    parts.push(`one of ${enumeration.map((v) => `\`${JSON.stringify(v)}\``).join(', ')}`);
  else {
    const type = schema['type'];
    const types = Array.isArray(type) ? type.map(String) : type === undefined ? [] : [String(type)];
    parts.push(types.length > 0 ? types.join(' or ') : Array.isArray(value) ? 'array' : typeof value);
  }
  const min = schema['minimum'];
  const max = schema['maximum'];
  if (typeof min === 'number' && typeof max === 'number') parts.push(`${min}-${max}`);
  else if (typeof min === 'number') parts.push(`≥ ${min}`);
  else if (typeof max === 'number') parts.push(`≤ ${max}`);
  for (const [k, label] of [
    ['exclusiveMinimum', '>'],
    ['exclusiveMaximum', '<'],
  ] as const) {
    if (typeof schema[k] === 'number') parts.push(`${label} ${schema[k]}`);
  }
  if (typeof schema['pattern'] === 'string') parts.push(`matching \`${schema['pattern']}\``);
  const items = schema['items'];
  if (
    items !== null &&
    typeof items === 'object' &&
    !Array.isArray(items) &&
    typeof items['type'] === 'string'
  )
    parts.push(`of ${items['type']}`);
  return parts.join(', ');
}

/** A table cell: `|` escaped, and `<` outside code spans too (the page is a Vue template). */
function cell(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/</g, '&lt;').replace(/\{\{/g, '&#123;&#123;')))
    .join('')
    .replace(/\|/g, '\\|');
}

export interface ValueRow {
  readonly key: string;
  readonly type: string;
  readonly value: Json;
  readonly description: string;
}

/** One row per documented key or leaf, in file order. */
export function valueRows(yaml: string, schema: Schema): ValueRow[] {
  const values = load(yaml) as { [key: string]: Json };
  const comments = valueComments(yaml);
  const rows: ValueRow[] = [];
  const walk = (node: { [key: string]: Json }, path: string[]): void => {
    for (const [key, value] of Object.entries(node)) {
      const at = [...path, key];
      const dotted = at.join('.');
      const mapping = value !== null && typeof value === 'object' && !Array.isArray(value);
      if (comments.has(dotted) || !mapping || Object.keys(value).length === 0) {
        rows.push({
          key: dotted,
          type: schemaSummary(schemaAt(schema, at), value),
          value,
          description: comments.get(dotted) ?? '',
        });
      } else walk(value, at);
    }
  };
  walk(values, []);
  return rows;
}

/** The page. */
export function renderChartValues(
  yaml = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8'),
  schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as Schema,
): string {
  const rows = valueRows(yaml, schema);
  return [
    '<!-- generated by scripts/docs-chart-values.ts from charts/echo-chaos/values.yaml and values.schema.json, do not edit -->',
    '',
    '# Chart values',
    '',
    'Every value of the Helm chart `charts/echo-chaos`: its default, what `values.schema.json` accepts',
    '(Helm refuses a value it does not accept) and what it does, from the comments of `values.yaml`.',
    'Set them with `--set key=value` or a values file (`-f my-values.yaml`).',
    '',
    '| Key | Default | Accepts | Meaning |',
    '|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| \`${r.key}\` | \`${cell(JSON.stringify(r.value)).replace(/`/g, "'")}\` | ${cell(r.type)} | ${cell(r.description)} |`,
    ),
    '',
  ].join('\n');
}

if (import.meta.main) {
  const page = renderChartValues();
  if (process.argv.includes('--write')) writeFileSync(CHART_VALUES_PAGE, page);
  else if (process.argv.includes('--check')) {
    if (readFileSync(CHART_VALUES_PAGE, 'utf8') !== page) {
      console.error(`${CHART_VALUES_PAGE} is stale: run npm run gen:chart-values`);
      process.exit(1);
    }
  } else process.stdout.write(page);
}
