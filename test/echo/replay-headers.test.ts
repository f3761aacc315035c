import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadObsConfig } from '@echo-chaos/obs';
import { DEADLINE_HEADER } from '@echo-chaos/obs/internal';
import { curlCommand } from '../../src/echo/console/page/curl.ts';
import { NOT_REPLAYED_HEADERS } from '../../src/echo/replay-headers.ts';

test('replay headers – the stored deadline headers are obs’s own names, lower case as node gives them', () => {
  const inbound = loadObsConfig({ env: {} }).config['timeout-budget']['inbound-header'];
  assert.ok(NOT_REPLAYED_HEADERS.includes(DEADLINE_HEADER.toLowerCase()), DEADLINE_HEADER);
  assert.ok(NOT_REPLAYED_HEADERS.includes(inbound.toLowerCase()), inbound);
  for (const name of NOT_REPLAYED_HEADERS) assert.equal(name, name.toLowerCase());
});

test('replay headers – copy as curl leaves out every one of them, and keeps the others', () => {
  const headers: Record<string, string> = { accept: 'text/plain', 'x-kept': 'yes' };
  for (const name of NOT_REPLAYED_HEADERS) headers[name] = '1';
  const { command } = curlCommand(
    { method: 'GET', url: '/a', headers, body: '', body_encoding: 'utf8', body_truncated: false },
    'http://localhost:8080',
  );
  for (const name of NOT_REPLAYED_HEADERS) assert.ok(!command.includes(`'${name}:`), `${name} in ${command}`);
  assert.match(command, /'accept: text\/plain'/);
  assert.match(command, /'x-kept: yes'/);
});
