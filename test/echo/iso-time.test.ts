import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { isoNow, parseRfc3339 } from '../../src/echo/iso-time.ts';

test('iso time – the ISO text of the current millisecond, made again when the millisecond changes', () => {
  mock.timers.enable({ apis: ['Date'], now: 1_700_000_000_123 });
  try {
    assert.equal(isoNow(), '2023-11-14T22:13:20.123Z');
    assert.equal(isoNow(), '2023-11-14T22:13:20.123Z');
    mock.timers.tick(1);
    assert.equal(isoNow(), '2023-11-14T22:13:20.124Z');
    mock.timers.tick(86_400_000);
    assert.equal(isoNow(), '2023-11-15T22:13:20.124Z');
  } finally {
    mock.timers.reset();
  }
});

test('iso time – parseRfc3339 reads an RFC 3339 time at any offset, to the millisecond, and refuses what is not one', () => {
  const at = Date.UTC(2026, 10, 27, 10, 0, 0);
  assert.equal(parseRfc3339('2026-11-27T10:00:00Z'), at);
  assert.equal(parseRfc3339('2026-11-27t10:00:00z'), at);
  assert.equal(parseRfc3339('2026-11-27T11:00:00+01:00'), at);
  assert.equal(parseRfc3339('2026-11-27T04:30:00-05:30'), at);
  assert.equal(parseRfc3339('2026-11-27T10:00:00.5Z'), at + 500);
  assert.equal(parseRfc3339('2026-11-27T10:00:00.123987654Z'), at + 123);
  assert.equal(parseRfc3339('2024-02-29T00:00:00Z'), Date.UTC(2024, 1, 29));
  assert.equal(parseRfc3339('0050-01-01T00:00:00Z'), new Date('0050-01-01T00:00:00Z').getTime());
  for (const text of [
    '',
    '2026-11-27T10:00:00', // no offset: the server's zone is not the client's
    '2026-11-27',
    '2026-11-27 10:00:00Z',
    '2026-02-30T00:00:00Z', // Date.parse makes it 2 March
    '2025-02-29T00:00:00Z',
    '2100-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-01T00:00:00Z',
    '2026-11-00T00:00:00Z',
    '2026-11-27T24:00:00Z',
    '2026-11-27T10:60:00Z',
    '2026-11-27T10:00:60Z',
    '2026-11-27T10:00:00+24:00',
    '2026-11-27T10:00:00+01:60',
    '2026-11-27T10:00:00+0100',
    '2026-11-27T10:00:00.Z',
    '2026-11-27T10:00:00.1234567890Z',
    '1700000000000',
  ])
    assert.equal(parseRfc3339(text), undefined, text);
});
