import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LiveRow } from '../../../src/echo/console/live-row.ts';
import {
  isFiltering,
  matchesFilter,
  NO_FILTER,
  statusClassOf,
} from '../../../src/echo/console/page/filter.ts';

const row = (over: Partial<LiveRow> = {}): LiveRow => ({
  id: 'a',
  seq: 0,
  timeMs: 0,
  method: 'GET',
  path: '/api/orders',
  status: 200,
  durationMs: 1,
  faults: [],
  protocol: 'HTTP/1.1',
  ...over,
});
const delay = { kind: 'delay', control: 'X-Echo-Delay', source: 'header', value: 100 } as const;

test('console filter – no filter passes everything', () => {
  assert.equal(matchesFilter(row(), NO_FILTER), true);
  assert.equal(isFiltering(NO_FILTER), false);
  assert.equal(isFiltering({ ...NO_FILTER, session: ' s ' }), true);
});

test('console filter – path is whole, or its start with a trailing *, as GET /history reads it', () => {
  assert.equal(matchesFilter(row(), { ...NO_FILTER, path: '/api/orders' }), true);
  assert.equal(matchesFilter(row(), { ...NO_FILTER, path: '/api' }), false);
  assert.equal(matchesFilter(row(), { ...NO_FILTER, path: '/api/*' }), true);
  assert.equal(matchesFilter(row(), { ...NO_FILTER, path: '/web/*' }), false);
});

test('console filter – status class; 0 (no response) is in none', () => {
  assert.equal(statusClassOf(204), '2xx');
  assert.equal(statusClassOf(499), '4xx');
  assert.equal(statusClassOf(0), '');
  assert.equal(matchesFilter(row({ status: 503 }), { ...NO_FILTER, statusClass: '5xx' }), true);
  assert.equal(matchesFilter(row({ status: 200 }), { ...NO_FILTER, statusClass: '5xx' }), false);
  assert.equal(matchesFilter(row({ status: 0 }), { ...NO_FILTER, statusClass: '5xx' }), false);
});

test('console filter – fault: a kind, none, or any', () => {
  const faulty = row({ faults: [delay] });
  assert.equal(matchesFilter(faulty, { ...NO_FILTER, fault: 'delay' }), true);
  assert.equal(matchesFilter(faulty, { ...NO_FILTER, fault: 'error' }), false);
  assert.equal(matchesFilter(faulty, { ...NO_FILTER, fault: 'any' }), true);
  assert.equal(matchesFilter(faulty, { ...NO_FILTER, fault: 'none' }), false);
  assert.equal(matchesFilter(row(), { ...NO_FILTER, fault: 'none' }), true);
  assert.equal(matchesFilter(row(), { ...NO_FILTER, fault: 'any' }), false);
});

test('console filter – session exactly; a row without one never matches a session', () => {
  assert.equal(matchesFilter(row({ session: 'alice' }), { ...NO_FILTER, session: 'alice' }), true);
  assert.equal(matchesFilter(row({ session: 'alice' }), { ...NO_FILTER, session: 'ali' }), false);
  assert.equal(matchesFilter(row(), { ...NO_FILTER, session: 'alice' }), false);
});
