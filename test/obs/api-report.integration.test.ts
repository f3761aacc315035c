import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { API_REPORT_FILE, apiExtractorUnavailable, generateApiReport } from '../../scripts/api-report.ts';

/**
 * For `test(..., { skip })`: false when api-extractor runs (installed into the cache on first use,
 * scripts/api-report.ts), else why not. In CI a missing api-extractor is an error, not a skip.
 */
function apiExtractorSkip(): false | string {
  const missing = apiExtractorUnavailable();
  if (missing === undefined) return false;
  if (process.env['CI']) throw new Error(`api-extractor unavailable: ${missing}: required in CI`);
  return `api-extractor unavailable: ${missing}`;
}

/** Names the report lists as exported: `export function x`, `export const X`, `export class X`, … */
export function exportedNames(report: string): string[] {
  const names = new Set<string>();
  for (const m of report.matchAll(
    /^export (?:declare )?(?:abstract )?(?:function|const|class|interface|type|enum|namespace) ([A-Za-z_$][\w$]*)/gm,
  )) {
    names.add(m[1]!);
  }
  return [...names].sort();
}

test('api report – the public surface of @echo-chaos/obs matches the checked-in report', {
  skip: apiExtractorSkip(),
}, () => {
  const checkedIn = readFileSync(API_REPORT_FILE, 'utf8');
  const generated = generateApiReport();
  assert.ok(exportedNames(generated).length > 20, 'the report lists too few exports to be the real surface');
  assert.equal(
    generated,
    checkedIn,
    'the public surface changed: review it, then run `npm run api-report` and commit src/obs/obs.api.md',
  );
});

test('api report – exportedNames reads every kind of declaration', () => {
  const sample = [
    'export function a(): void;',
    'export const B = 1;',
    'export class C {',
    'export interface D {',
    'export type E = string;',
    'export abstract class F {',
    '    export function notTopLevel(): void;',
  ].join('\n');
  assert.deepEqual(exportedNames(sample), ['B', 'C', 'D', 'E', 'F', 'a']);
});

/** Top-level exports the report marks `(undocumented)`: declared without TSDoc. */
export function undocumentedExports(report: string): string[] {
  const names = new Set<string>();
  for (const m of report.matchAll(
    /^\/\/ @\w+ \(undocumented\)\nexport (?:declare )?(?:abstract )?(?:function|const|class|interface|type|enum|namespace) ([A-Za-z_$][\w$]*)/gm,
  )) {
    names.add(m[1]!);
  }
  return [...names].sort();
}

test('api report – every export of @echo-chaos/obs carries TSDoc', () => {
  const sample = [
    '// @public (undocumented)',
    'export function a(): void;',
    '// @public',
    'export const B = 1;',
    '    // (undocumented)',
    '    member: string;',
  ].join('\n');
  assert.deepEqual(undocumentedExports(sample), ['a']);
  assert.deepEqual(undocumentedExports(readFileSync(API_REPORT_FILE, 'utf8')), [], 'exported without TSDoc');
});

/** The backticked names of the API page, docs/obs/api.md (the README's `## API` section until it moved there). */
function documentedNames(page: string): string[] {
  assert.ok(page.startsWith('# API\n'), 'docs/obs/api.md is not the "# API" page');
  return [...new Set([...page.matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((m) => m[1]!))].sort();
}

test('api report – the API page documents every export, and documents no name that is not exported', () => {
  const exported = exportedNames(readFileSync(API_REPORT_FILE, 'utf8'));
  const page = readFileSync(new URL('../../docs/obs/api.md', import.meta.url), 'utf8');
  // Members of `app.obs` and words in backticks that are not names of exports.
  const notExports = new Set([
    'OBS_CONFIG_FILE',
    'OBS_PROFILE',
    'get',
    'set',
    'admit',
    'admitLabels',
    'admitRecording',
    'keeps',
    'require',
    'isEnabledFor',
    'readiness',
    'addReadinessCheck',
    'addHealthComponent',
    'outcome',
    'options',
    'config',
    'idle',
    'draining',
    'drained',
    'dev',
    'prod',
    'test',
    'canary',
    'ENFORCING',
    'DRY_RUN',
    'traceparent',
    'trace_id',
    'span_id',
    'trace_flags',
    'enabled',
    'error',
    'code',
    // The features' parts of `app.obs` (`RetryApi`, ...), named beside their interfaces.
    'event',
    'runtime',
    'containerMemory',
    'bind',
    'wrap',
    'retry',
    'job',
    'every',
  ]);
  const documented = documentedNames(page).filter((name) => !notExports.has(name));
  assert.deepEqual(
    exported.filter((name) => !documented.includes(name)),
    [],
    'exported but not documented on the API page',
  );
  assert.deepEqual(
    documented.filter((name) => !exported.includes(name)),
    [],
    'documented on the API page but not exported',
  );
});
