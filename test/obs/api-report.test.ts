import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { API_REPORT_FILE, generateApiReport } from '../../scripts/api-report.ts';

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

test('api report – the public surface of @echo-chaos/obs matches the checked-in report', () => {
  const checkedIn = readFileSync(API_REPORT_FILE, 'utf8');
  const generated = generateApiReport();
  assert.ok(exportedNames(generated).length > 20, 'the report lists too few exports to be the real surface');
  assert.equal(
    generated,
    checkedIn,
    'the public surface changed: review it, then run `node scripts/api-report.ts --write` and commit src/obs/obs.api.md',
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
