import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SseParser } from '../../../src/echo/console/page/sse-parser.ts';

test('console SSE parser – events, named or not, with ids; comments and retry ignored', () => {
  const parser = new SseParser();
  assert.deepEqual(
    parser.push('retry: 2000\n\n: heartbeat\n\nid: 7\nevent: row\ndata: {"a":1}\n\ndata: x\ndata: y\n\n'),
    [
      { event: 'row', data: '{"a":1}', id: '7' },
      { event: 'message', data: 'x\ny', id: '7' },
    ],
  );
});

test('console SSE parser – pieces cut anywhere (inside a line, between \\r and \\n) give each event once', () => {
  const text = 'event: row\r\ndata: one\r\n\r\nevent: dropped\rdata: {"dropped":2}\r\rdata:three\n\n';
  const whole = new SseParser().push(text);
  assert.equal(whole.length, 3);
  for (let cut = 1; cut < text.length; cut++) {
    const parser = new SseParser();
    const events = [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut))];
    assert.deepEqual(events, whole, `cut at ${cut}`);
  }
  assert.deepEqual(whole[2], { event: 'message', data: 'three' });
});

test('console SSE parser – an event is given only once its blank line arrived', () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push('event: row\ndata: 1\n'), []);
  assert.deepEqual(parser.push('\n'), [{ event: 'row', data: '1' }]);
});
