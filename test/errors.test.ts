import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { format } from 'node:util';
import { ECHO_ERRORS, EchoError, isEchoError } from '../src/echo/errors.ts';
import { CodedError, isObsError, OBS_ERRORS, ObsError } from '../src/obs/index.ts';
import { isOperatorError, OPERATOR_ERRORS, OperatorError } from '../src/operator/errors.ts';
import { isScenarioError, SCENARIO_ERRORS, ScenarioError } from '../src/scenario/errors.ts';

/**
 * One error shape across echo, obs, scenario and the operator (STYLE.md: "one error shape in every
 * area"): a catalogue per area, every code used is in it and in its documented table, one problem has
 * one status in every area, callers match on `code` (never `instanceof`), and the four classes are
 * built the same way. Each check is a function over its inputs, run on the repository and, at the
 * end, on a broken copy that it must catch.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));

type Catalogue = Readonly<
  Record<string, { readonly status: number; readonly message: string; readonly when: string }>
>;
type ErrorClass = new (code: never, args: readonly unknown[], options?: { cause?: unknown }) => Error;

interface Area {
  readonly catalogue: Catalogue;
  readonly errorClass: ErrorClass;
  readonly guard: (error: unknown) => boolean;
  /** Where the area's catalogue and classes live (the one file allowed `instanceof` of them). */
  readonly errorsFile: string;
  /** The documented table: a file and the name of its generated section. */
  readonly table: { readonly file: string; readonly section: string };
}

/** By code prefix: `ECHO` for `ECHO_ERR_*`. */
const AREAS: Readonly<Record<string, Area>> = {
  ECHO: {
    catalogue: ECHO_ERRORS,
    errorClass: EchoError as ErrorClass,
    guard: isEchoError,
    errorsFile: 'src/echo/errors.ts',
    table: { file: 'docs/service/errors.md', section: 'errors' },
  },
  OBS: {
    catalogue: OBS_ERRORS,
    errorClass: ObsError as ErrorClass,
    guard: isObsError,
    errorsFile: 'src/obs/core/errors.ts',
    table: { file: 'docs/obs/actuator.md', section: 'obs-errors' },
  },
  SCENARIO: {
    catalogue: SCENARIO_ERRORS,
    errorClass: ScenarioError as ErrorClass,
    guard: isScenarioError,
    errorsFile: 'src/scenario/errors.ts',
    table: { file: 'docs/service/errors.md', section: 'scenario-errors' },
  },
  OPERATOR: {
    catalogue: OPERATOR_ERRORS,
    errorClass: OperatorError as ErrorClass,
    guard: isOperatorError,
    errorsFile: 'src/operator/errors.ts',
    table: { file: 'src/operator/README.md', section: 'operator-errors' },
  },
};

const CATALOGUES: Readonly<Record<string, Catalogue>> = Object.fromEntries(
  Object.entries(AREAS).map(([prefix, area]) => [prefix, area.catalogue]),
);

const CODE = /\b(ECHO|OBS|SCENARIO|OPERATOR)_ERR_[A-Z0-9_]+\b/g;

/** Every file under `dirs` (relative to the root, `/`-separated), without `dist/` and `node_modules/`. */
function filesUnder(...dirs: string[]): Map<string, string> {
  const files = new Map<string, string>();
  for (const dir of dirs) {
    for (const entry of readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })) {
      const path = join(dir, entry);
      if (path.split(sep).some((part) => part === 'dist' || part === 'node_modules')) continue;
      if (!statSync(join(ROOT, path)).isFile()) continue;
      files.set(path.split(sep).join('/'), readFileSync(join(ROOT, path), 'utf8'));
    }
  }
  return files;
}

// --- the checks ---

/**
 * (1) `file: code` for every code named in `files` that its area's catalogue lacks. The whole text
 * counts, string literals and comments alike: a comment naming a code that does not exist misleads.
 */
function unknownCodes(files: ReadonlyMap<string, string>, catalogues: typeof CATALOGUES): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    for (const [code, prefix] of text.matchAll(CODE)) {
      const catalogue = catalogues[prefix!];
      if (catalogue === undefined || !Object.hasOwn(catalogue, code)) out.push(`${file}: ${code}`);
    }
  }
  return [...new Set(out)];
}

/** (2) One line per suffix (`UNSUPPORTED_MEDIA_TYPE`) whose codes do not all share one status. */
function statusConflicts(catalogues: typeof CATALOGUES): string[] {
  const bySuffix = new Map<string, string[]>();
  for (const catalogue of Object.values(catalogues)) {
    for (const [code, { status }] of Object.entries(catalogue)) {
      const suffix = code.slice(code.indexOf('_ERR_') + '_ERR_'.length);
      bySuffix.set(suffix, [...(bySuffix.get(suffix) ?? []), `${code} ${status}`]);
    }
  }
  return [...bySuffix.entries()]
    .filter(([, entries]) => new Set(entries.map((e) => e.split(' ')[1])).size > 1)
    .map(([suffix, entries]) => `*_ERR_${suffix}: ${entries.join(', ')}`);
}

/** The rows (`code` → status) of a generated section of a Markdown file. */
function tableRows(markdown: string, section: string): Map<string, number> | undefined {
  const begin = markdown.search(new RegExp(`<!-- generated:${section} \\(`));
  const end = markdown.indexOf(`<!-- /generated:${section} -->`);
  if (begin === -1 || end === -1) return undefined;
  const rows = new Map<string, number>();
  for (const m of markdown.slice(begin, end).matchAll(/^\| `([A-Z0-9_]+)` \| (\d{3}) \|/gm)) {
    rows.set(m[1]!, Number(m[2]));
  }
  return rows;
}

/** (3) What differs between a catalogue and its documented table: missing, extra or wrong rows. */
function tableProblems(catalogue: Catalogue, markdown: string, section: string): string[] {
  const rows = tableRows(markdown, section);
  if (rows === undefined) return [`no generated section ${section}`];
  const out: string[] = [];
  for (const [code, { status }] of Object.entries(catalogue)) {
    const documented = rows.get(code);
    if (documented === undefined) out.push(`${code} has no row`);
    else if (documented !== status)
      out.push(`${code} is documented as ${documented}, catalogued as ${status}`);
  }
  for (const code of rows.keys()) if (!Object.hasOwn(catalogue, code)) out.push(`${code} is not catalogued`);
  return out;
}

/** (4) `file: instanceof X` for every `instanceof` of one of `classes` outside `allowed` files. */
function instanceofUses(
  files: ReadonlyMap<string, string>,
  classes: ReadonlySet<string>,
  allowed: ReadonlySet<string>,
): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    if (allowed.has(file)) continue;
    for (const [use, name] of text.matchAll(/\binstanceof\s+(?:[\w$]+\.)*([\w$]+)/g)) {
      if (classes.has(name!)) out.push(`${file}: ${use}`);
    }
  }
  return out;
}

/** The classes an errors.ts declares: `export class X`. */
function classesIn(source: string): string[] {
  return [...source.matchAll(/^export class ([\w$]+)/gm)].map((m) => m[1]!);
}

/** (5) How an error of `area` built from `code` differs from the one shape every area shares. */
function shapeProblems(area: Area, code: string): string[] {
  const def = area.catalogue[code]!;
  const args = Array.from({ length: def.message.split('%s').length - 1 }, (_, i) => `arg${i}`);
  const cause = new Error('the cause');
  const out: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) out.push(`${code}: ${what}`);
  };
  let error: Error & { code?: unknown; statusCode?: unknown };
  try {
    error = new area.errorClass(code as never, args, { cause });
  } catch (e) {
    return [`${code}: new ${area.errorClass.name}(code, args, { cause }) threw ${String(e)}`];
  }
  check(error instanceof Error, 'is not an Error');
  check(error.code === code, `code is ${String(error.code)}`);
  check(
    error.statusCode === def.status,
    `statusCode is ${String(error.statusCode)}, catalogued ${def.status}`,
  );
  check(
    error.message === format(def.message, ...args),
    `message ${JSON.stringify(error.message)} is not its template's`,
  );
  check(error.name === area.errorClass.name, `name is ${error.name}, the class is ${area.errorClass.name}`);
  check(error.cause === cause, 'the cause is not passed through');
  check(area.guard(error), 'its area guard does not recognise it');
  check(
    !area.guard({ code: 'NOT_OUR_ERR_X' }) && !area.guard(null),
    'its guard accepts what is not an error of its area',
  );
  const plain = new area.errorClass(code as never, args);
  check(!Object.hasOwn(plain, 'cause'), 'an error built without a cause has a cause property');
  const own = Object.getOwnPropertyNames(error).sort().join(',');
  check(own === 'cause,code,message,name,stack,statusCode', `own properties are ${own}`);
  for (const [key, entry] of Object.entries(area.catalogue)) {
    const fields = Object.keys(entry).sort().join(',');
    if (fields !== 'message,status,when') out.push(`${key}: catalogue fields are ${fields}`);
    if (!(Number.isInteger(entry.status) && entry.status >= 400 && entry.status <= 599)) {
      out.push(`${key}: status ${entry.status} is not an HTTP error status`);
    }
    if (entry.when.trim().length < 10) out.push(`${key}: says too little about when it happens`);
  }
  return out;
}

/** (6) `throw new Error(...)` in `files`: a failure without a code (an invariant uses `assert`). */
function bareThrows(files: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const [path, text] of files) {
    if (!path.startsWith('src/') || !/\.[cm]?ts$/.test(path)) continue;
    const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    for (const line of code.split('\n'))
      if (/\bthrow\s+new\s+Error\s*\(/.test(line)) out.push(`${path}: ${line.trim()}`);
  }
  return out;
}

// --- on the repository ---

const SOURCES = filesUnder('src', 'examples');
const ERRORS_FILES = new Set(Object.values(AREAS).map((area) => area.errorsFile));
const CLASSES = new Set(
  Object.values(AREAS).flatMap((area) => classesIn(readFileSync(join(ROOT, area.errorsFile), 'utf8'))),
);

test('errors – every code src/ and examples/ name is in its area catalogue', () => {
  assert.ok(SOURCES.size > 50, `only ${SOURCES.size} files found`);
  assert.deepEqual(unknownCodes(SOURCES, CATALOGUES), []);
});

test('errors – codes that name the same problem in different areas have the same status', () => {
  assert.deepEqual(statusConflicts(CATALOGUES), []);
  // The problems the issue named, present in more than one area.
  for (const suffix of ['UNSUPPORTED_MEDIA_TYPE', 'INVALID_JSON', 'BODY_TOO_LARGE', 'CONFIG']) {
    const areas = Object.entries(CATALOGUES).filter(([prefix, c]) =>
      Object.hasOwn(c, `${prefix}_ERR_${suffix}`),
    );
    assert.ok(areas.length >= 2, `*_ERR_${suffix} is in ${areas.length} area(s) only`);
  }
  assert.equal(ECHO_ERRORS.ECHO_ERR_UNSUPPORTED_MEDIA_TYPE.status, 415);
});

for (const [prefix, area] of Object.entries(AREAS)) {
  test(`errors – every ${prefix}_ERR_* code is in the table of ${area.table.file}, with its status`, () => {
    const markdown = readFileSync(join(ROOT, area.table.file), 'utf8');
    assert.deepEqual(tableProblems(area.catalogue, markdown, area.table.section), []);
  });
}

test('errors – src/ and examples/ match errors on code, never with instanceof of our error classes', () => {
  for (const name of ['EchoError', 'ObsError', 'ObsConfigError', 'ScenarioError', 'OperatorError']) {
    assert.ok(CLASSES.has(name), `${name} is not among the classes found: ${[...CLASSES].join(', ')}`);
  }
  assert.deepEqual(instanceofUses(SOURCES, CLASSES, ERRORS_FILES), []);
});

test('errors – the four error classes have one shape: code, statusCode, message from the template, name, cause', () => {
  const problems: string[] = [];
  for (const area of Object.values(AREAS)) {
    const codes = Object.keys(area.catalogue);
    // One code with a template argument and one without, where the catalogue has them.
    const withArgs = codes.find((c) => area.catalogue[c]!.message.includes('%s'));
    const withoutArgs = codes.find((c) => !area.catalogue[c]!.message.includes('%s'));
    for (const code of new Set([withArgs ?? codes[0]!, withoutArgs ?? codes[0]!])) {
      problems.push(...shapeProblems(area, code));
    }
  }
  assert.deepEqual(problems, []);
  // The guards tell the areas apart.
  const errors = Object.values(AREAS).map(
    (area) => new area.errorClass(Object.keys(area.catalogue)[0] as never, []),
  );
  for (const area of Object.values(AREAS)) {
    assert.deepEqual(
      errors.map((e) => area.guard(e)),
      errors.map((e) => e instanceof area.errorClass),
    );
  }
});

test('errors – every area binds the one base, CodedError, to its catalogue', () => {
  for (const [prefix, area] of Object.entries(AREAS)) {
    assert.equal(
      Object.getPrototypeOf(area.errorClass),
      CodedError,
      `${prefix}: not a direct subclass of CodedError`,
    );
    const error = new area.errorClass(Object.keys(area.catalogue)[0] as never, []);
    assert.ok(error instanceof CodedError, `${prefix}: an error is not a CodedError`);
  }
});

test('errors – src/ throws no bare Error: a failure has a code, an invariant is an assert', () => {
  assert.deepEqual(bareThrows(SOURCES), []);
});

// --- each check catches a broken copy ---

test('errors – each check catches a broken copy', () => {
  // (1) a code the catalogue lacks, in a string or a comment
  const files = new Map([
    ['src/echo/x.ts', "throw new EchoError('ECHO_ERR_NOPE', []); // see OBS_ERR_CONFIG"],
    ['examples/y.ts', '// raises OPERATOR_ERR_MISSING'],
  ]);
  assert.deepEqual(unknownCodes(files, CATALOGUES), [
    'src/echo/x.ts: ECHO_ERR_NOPE',
    'examples/y.ts: OPERATOR_ERR_MISSING',
  ]);
  // (2) one problem, two statuses
  const obs415as400 = {
    ...CATALOGUES,
    OBS: { ...OBS_ERRORS, OBS_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 400, message: '%s', when: 'whenever' } },
  };
  assert.deepEqual(statusConflicts(obs415as400), [
    '*_ERR_UNSUPPORTED_MEDIA_TYPE: ECHO_ERR_UNSUPPORTED_MEDIA_TYPE 415, OBS_ERR_UNSUPPORTED_MEDIA_TYPE 400',
  ]);
  // (3) a table that lacks a row, has a wrong status or an extra row, or no section
  const catalogue = {
    X_ERR_A: { status: 400, message: 'a', when: 'a' },
    X_ERR_B: { status: 500, message: 'b', when: 'b' },
  };
  const table = [
    '<!-- generated:x-errors (by scripts/readme-tables.ts, do not edit) -->',
    '| Code | Status | When |',
    '|---|---|---|',
    '| `X_ERR_A` | 404 | a |',
    '| `X_ERR_C` | 500 | c |',
    '<!-- /generated:x-errors -->',
  ].join('\n');
  assert.deepEqual(tableProblems(catalogue, table, 'x-errors'), [
    'X_ERR_A is documented as 404, catalogued as 400',
    'X_ERR_B has no row',
    'X_ERR_C is not catalogued',
  ]);
  assert.deepEqual(tableProblems(catalogue, '# nothing', 'x-errors'), ['no generated section x-errors']);
  // (4) instanceof of our classes, outside the errors.ts files; other classes are fine
  const uses = new Map([
    ['src/echo/main.ts', 'if (err instanceof EchoConfigError || err instanceof obs.ObsError) {}'],
    ['src/echo/errors.ts', 'if (err instanceof EchoError) {}'],
    ['examples/z.ts', 'if (err instanceof TypeError) {}'],
  ]);
  assert.deepEqual(instanceofUses(uses, CLASSES, ERRORS_FILES), [
    'src/echo/main.ts: instanceof EchoConfigError',
    'src/echo/main.ts: instanceof obs.ObsError',
  ]);
  // (5) a class that keeps its status elsewhere, names itself wrongly and drops the cause
  class Sloppy extends Error {
    readonly code: string;
    readonly status: number;
    constructor(code: string, args: readonly unknown[]) {
      super(`${code}: ${args.join(' ')}`);
      this.code = code;
      this.status = 400;
    }
  }
  const sloppy: Area = {
    catalogue: { SLOPPY_ERR_X: { status: 400, message: 'x %s', when: 'in this test' } },
    errorClass: Sloppy as unknown as ErrorClass,
    guard: (e) => (e as { code?: unknown } | null)?.code === 'SLOPPY_ERR_X',
    errorsFile: 'src/sloppy/errors.ts',
    table: { file: 'README.md', section: 'sloppy-errors' },
  };
  assert.deepEqual(shapeProblems(sloppy, 'SLOPPY_ERR_X'), [
    'SLOPPY_ERR_X: statusCode is undefined, catalogued 400',
    'SLOPPY_ERR_X: message "SLOPPY_ERR_X: arg0" is not its template\'s',
    'SLOPPY_ERR_X: name is Error, the class is Sloppy',
    'SLOPPY_ERR_X: the cause is not passed through',
    'SLOPPY_ERR_X: own properties are code,message,stack,status',
  ]);
});

test('errors – the bare-throw check catches one, and leaves comments, asserts and examples alone', () => {
  const files = new Map([
    ['src/x/a.ts', "if (bad) throw new Error('no code');\nthrow new ObsError('OBS_ERR_CONFIG', []);"],
    ['src/x/b.ts', "// throw new Error('in a comment')\nassert.ok(ok, 'an invariant');"],
    ['examples/c.ts', "throw new Error('an example app may');"],
  ]);
  assert.deepEqual(bareThrows(files), ["src/x/a.ts: if (bad) throw new Error('no code');"]);
});

test('errors – the file walk skips dist/ and node_modules/', () => {
  const paths = [...SOURCES.keys()];
  assert.ok(paths.some((p) => p.startsWith('examples/')));
  assert.ok(paths.includes('src/obs/core/errors.ts'));
  assert.deepEqual(
    paths.filter((p) => /(^|\/)(dist|node_modules)\//.test(p)),
    [],
  );
});
