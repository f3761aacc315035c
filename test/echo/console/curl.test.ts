import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CurlSource, curlCommand } from '../../../src/echo/console/page/curl.ts';

const source = (over: Partial<CurlSource> = {}): CurlSource => ({
  method: 'GET',
  url: '/hello?x=1',
  headers: {},
  body: '',
  body_encoding: 'utf8',
  body_truncated: false,
  ...over,
});

test('copy as curl – a GET is the URL on this origin', () => {
  assert.deepEqual(curlCommand(source(), 'http://localhost:8080'), {
    command: "curl 'http://localhost:8080/hello?x=1'",
    masked: [],
    truncated: false,
  });
});

test('copy as curl – headers as sent, without those replay leaves out, nor the masked ones (named)', () => {
  const { command, masked } = curlCommand(
    source({
      headers: {
        host: 'localhost:8080',
        'content-length': '2',
        connection: 'keep-alive',
        'x-echo-delay': '100ms',
        accept: ['a', 'b'],
        authorization: '[MASKED]',
        ':authority': 'x',
      },
    }),
    'http://h',
  );
  assert.equal(command, "curl 'http://h/hello?x=1' -H 'x-echo-delay: 100ms' -H 'accept: a' -H 'accept: b'");
  assert.deepEqual(masked, ['authorization']);
});

test('copy as curl – a text body goes as --data-binary (POST implied), another method is named', () => {
  assert.equal(
    curlCommand(source({ method: 'POST', body: '{"a":1}' }), 'http://h').command,
    `curl 'http://h/hello?x=1' --data-binary '{"a":1}'`,
  );
  assert.equal(
    curlCommand(source({ method: 'PUT', body: 'x' }), 'http://h').command,
    "curl -X 'PUT' 'http://h/hello?x=1' --data-binary 'x'",
  );
  assert.equal(
    curlCommand(source({ method: 'DELETE' }), 'http://h').command,
    "curl -X 'DELETE' 'http://h/hello?x=1'",
  );
  assert.equal(curlCommand(source({ body: 'x', body_truncated: true }), 'http://h').truncated, true);
});
