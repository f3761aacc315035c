import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatDuration, parseDurationMs } from '../../../src/obs/core/duration.ts';

test('duration – reads ms, s, m, h, d, decimals and bare milliseconds', () => {
  assert.equal(parseDurationMs('100ms'), 100);
  assert.equal(parseDurationMs('2s'), 2000);
  assert.equal(parseDurationMs('5m'), 300_000);
  assert.equal(parseDurationMs('1h'), 3_600_000);
  assert.equal(parseDurationMs('1d'), 86_400_000);
  assert.equal(parseDurationMs('1.5s'), 1500);
  assert.equal(parseDurationMs('250'), 250);
  assert.equal(parseDurationMs(250), 250);
  assert.equal(parseDurationMs(' 2s '), 2000);
});

test('duration – reads compound forms as Go and Kubernetes write them: the terms add up', () => {
  assert.equal(parseDurationMs('1h30m'), 5_400_000);
  assert.equal(parseDurationMs('90s'), 90_000);
  assert.equal(parseDurationMs('1h30m15s'), 5_415_000);
  assert.equal(parseDurationMs('1m5s'), 65_000);
  assert.equal(parseDurationMs('2s500ms'), 2500);
  assert.equal(parseDurationMs('1d12h'), 129_600_000);
  assert.equal(parseDurationMs('1.5h30m'), 7_200_000);
  assert.equal(parseDurationMs('0h0m0s'), 0);
});

test('duration – refuses everything else', () => {
  for (const bad of [
    '',
    's',
    '2 s',
    '-1s',
    '2x',
    '1e3',
    'PT2S',
    '9'.repeat(400),
    // A bare number is milliseconds alone; terms have a unit and no blanks or signs between them.
    '1h30',
    '30 1h',
    '1h 30m',
    '1h-30m',
    'h30m',
    '1hh',
  ]) {
    assert.equal(parseDurationMs(bad), undefined, bad);
  }
  for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, true, null, undefined, {}]) {
    assert.equal(parseDurationMs(bad), undefined, String(bad));
  }
});

test('duration – formats with the largest unit that divides exactly, and round-trips', () => {
  assert.equal(formatDuration(0), '0ms');
  assert.equal(formatDuration(50), '50ms');
  assert.equal(formatDuration(2000), '2s');
  assert.equal(formatDuration(1500), '1500ms');
  assert.equal(formatDuration(300_000), '5m');
  assert.equal(formatDuration(3_600_000), '1h');
  assert.equal(formatDuration(90_000), '90s');
  for (const ms of [0, 1, 999, 1000, 61_000, 86_400_000])
    assert.equal(parseDurationMs(formatDuration(ms)), ms);
});
