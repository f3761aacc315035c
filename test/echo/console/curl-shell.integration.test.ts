/** "Copy as curl" through a real shell: what the shell reads back is what was sent. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { curlCommand, shellQuote } from '../../../src/echo/console/page/curl.ts';

test('copy as curl – quotes survive the shell: what the shell reads back is what was sent', () => {
  const hostile = `it's "$HOME" \`id\` \\ ;|&`;
  assert.equal(execFileSync('sh', ['-c', `printf %s ${shellQuote(hostile)}`], { encoding: 'utf8' }), hostile);
  const binary = Buffer.from([0, 1, 2, 255, 39]).toString('base64');
  const { command } = curlCommand(
    {
      method: 'POST',
      url: '/hello?x=1',
      headers: {},
      body: binary,
      body_encoding: 'base64',
      body_truncated: false,
    },
    'http://h',
  );
  assert.match(command, /^printf %s '[^']+' \| base64 -d \| curl 'http:\/\/h\/hello\?x=1' --data-binary @-$/);
  const decoded = execFileSync('sh', ['-c', command.split(' | curl')[0]!]);
  assert.deepEqual([...decoded], [0, 1, 2, 255, 39]);
});
