import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { isoNow } from '../../src/echo/iso-time.ts';

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
