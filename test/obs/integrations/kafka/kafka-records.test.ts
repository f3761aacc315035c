import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OutboundBudgetPolicy } from '../../../../src/obs/features/request-context/request-context.ts';
import { loadObsConfig } from '../../../../src/obs/index.ts';
import {
  isStaleRecord,
  type RecordContextSettings,
  recordAgeMs,
  recordContext,
  stampMessage,
} from '../../../../src/obs/integrations/kafka/kafka-records.ts';

// Pure: every clock is injected.

const NOW = 1_700_000_000_000;
const budgetConfig = loadObsConfig({ env: {} }).config['timeout-budget'];
const policy: OutboundBudgetPolicy = {
  outboundHeader: 'Obs-Timeout-Ms',
  minimumBudgetMs: 100,
  abortOnExhaustion: false,
  applyClientTimeout: false,
  exhausted() {},
  failed() {},
};
const settings: RecordContextSettings = {
  budgetConfig,
  policy,
  requestIdHeader: 'X-Request-ID',
  newRequestId: () => 'new-id',
};

test('kafka records – a record’s context: the absolute deadline wins over the remaining header, as it was stamped', () => {
  const store = recordContext(
    { 'Obs-Timeout-Deadline-Ms': Buffer.from(String(NOW + 1234)), 'Obs-Timeout-Ms': '99999' },
    settings,
    NOW,
  );
  assert.equal(store.budget?.deadlineEpochMs, NOW + 1234);
  assert.equal(store.budget?.source, 'deadline-header');
  assert.equal(store.budget?.policy, policy);
  // A passed deadline is expired, not replaced: the listener runs with 0 left.
  const late = recordContext({ 'obs-timeout-deadline-ms': String(NOW - 5000) }, settings, NOW);
  assert.equal(late.budget?.deadlineEpochMs, NOW);
  assert.equal(late.budget?.source, 'deadline-header');
});

test('kafka records – a record’s context: without the absolute header, the remaining header counts from now less the margin', () => {
  const store = recordContext({ 'Obs-Timeout-Ms': Buffer.from('1000') }, settings, NOW);
  assert.equal(store.budget?.source, 'remaining-header');
  assert.equal(store.budget?.deadlineEpochMs, NOW + 1000 - budgetConfig['safety-margin']);
  const zero = recordContext({ 'Obs-Timeout-Ms': '0' }, settings, NOW);
  assert.equal(zero.budget?.deadlineEpochMs, NOW, '0 is expired, not absent');
});

test('kafka records – a record’s context: no deadline header, a malformed one or no policy gives no budget; the timestamp is never read', () => {
  assert.equal(recordContext(undefined, settings, NOW).budget, undefined);
  assert.equal(recordContext({ 'x-other': 'a' }, settings, NOW).budget, undefined, 'no default budget');
  assert.equal(recordContext({ 'Obs-Timeout-Ms': 'soon' }, settings, NOW).budget, undefined);
  assert.equal(
    recordContext({ 'Obs-Timeout-Deadline-Ms': ['1', '2'] }, settings, NOW).budget,
    undefined,
    'a repeated header is malformed',
  );
  const withoutPolicy = { ...settings, policy: undefined };
  assert.equal(recordContext({ 'Obs-Timeout-Ms': '500' }, withoutPolicy, NOW).budget, undefined);
});

test('kafka records – a record’s context: the request id from its header, else a new one', () => {
  assert.equal(recordContext({ 'x-request-id': Buffer.from('req-7') }, settings, NOW).requestId, 'req-7');
  assert.equal(recordContext({}, settings, NOW).requestId, 'new-id');
  assert.equal(recordContext({ 'X-Request-ID': '' }, settings, NOW).requestId, 'new-id');
  assert.equal(recordContext({ 'X-Request-ID': 'a'.repeat(128) }, settings, NOW).requestId, 'a'.repeat(128));
  for (const unsafe of ['a'.repeat(129), 'with space', 'line\nbreak']) {
    assert.equal(recordContext({ 'X-Request-ID': unsafe }, settings, NOW).requestId, 'new-id', unsafe);
  }
  const uuid = recordContext({}, { ...settings, newRequestId: undefined }, NOW).requestId;
  assert.match(uuid, /^[0-9a-f-]{36}$/);
});

test('kafka records – staleness: older than the max age by the record’s timestamp; an unreadable timestamp is never stale', () => {
  assert.equal(recordAgeMs(String(NOW - 2500), NOW), 2500);
  assert.equal(recordAgeMs(String(NOW + 2500), NOW), 0, 'a clock ahead is age 0');
  assert.equal(recordAgeMs(undefined, NOW), undefined);
  assert.equal(recordAgeMs('', NOW), undefined);
  assert.equal(recordAgeMs('-1', NOW), undefined);
  assert.equal(isStaleRecord(String(NOW - 60_001), NOW, 60_000), true);
  assert.equal(isStaleRecord(String(NOW - 60_000), NOW, 60_000), false, 'exactly the max age is kept');
  assert.equal(isStaleRecord('garbage', NOW, 0), false);
});

test('kafka records – stamps are added where the record has no header of that name, on a copy', () => {
  const message = { value: 'v', headers: { 'x-request-id': 'mine' } };
  const stamped = stampMessage(message, [
    ['X-Request-ID', 'req-1'],
    ['Obs-Timeout-Ms', '5'],
  ]);
  assert.deepEqual(stamped, { value: 'v', headers: { 'x-request-id': 'mine', 'Obs-Timeout-Ms': '5' } });
  assert.deepEqual(message.headers, { 'x-request-id': 'mine' }, 'the caller’s record is not changed');
  assert.deepEqual(stampMessage({}, [['a', '1']]), { headers: { a: '1' } });
});
