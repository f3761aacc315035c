/**
 * Generates the README's tables of environment variables and error codes from the code, so they
 * cannot drift. `node scripts/readme-tables.ts --write` rewrites README.md; the test
 * `test/readme.test.ts` fails when the checked-in README differs from what this produces.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { HEADER_VARIABLE, VARIABLES } from '../src/echo/config.ts';
import { ECHO_ERRORS } from '../src/echo/errors.ts';

const esc = (s: string) => s.replaceAll('|', '\\|');
const code = (s: string) => (s === '' ? '(empty)' : `\`${s}\``);

export function variablesTable(): string {
  const rows = VARIABLES.map(
    (v) => `| \`${v.name}\` | ${esc(v.meaning)} | ${code(v.default)} | ${esc(v.form)} |`,
  );
  rows.push(
    `| \`${HEADER_VARIABLE.name}\` | ${HEADER_VARIABLE.meaning} | ${HEADER_VARIABLE.default} | ${esc(HEADER_VARIABLE.form)} |`,
  );
  return ['| Variable | Meaning | Default | Accepted form |', '|---|---|---|---|', ...rows].join('\n');
}

export function errorsTable(): string {
  const rows = Object.entries(ECHO_ERRORS).map(([c, e]) => `| \`${c}\` | ${e.status} | ${esc(e.when)} |`);
  return ['| Code | Status | When |', '|---|---|---|', ...rows].join('\n');
}

const SECTIONS: Record<string, () => string> = { variables: variablesTable, errors: errorsTable };

/** The README with every generated section replaced by freshly generated content. */
export function renderReadme(readme: string): string {
  let out = readme;
  for (const [name, render] of Object.entries(SECTIONS)) {
    const begin = `<!-- generated:${name} (by scripts/readme-tables.ts, do not edit) -->`;
    const end = `<!-- /generated:${name} -->`;
    const start = out.indexOf(begin);
    const stop = out.indexOf(end);
    if (start === -1 || stop === -1) throw new Error(`README.md lacks the markers of section ${name}`);
    out = `${out.slice(0, start + begin.length)}\n${render()}\n${out.slice(stop)}`;
  }
  return out;
}

if (process.argv.includes('--write')) {
  const path = new URL('../README.md', import.meta.url);
  writeFileSync(path, renderReadme(readFileSync(path, 'utf8')));
}
