import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { buildApp } from '../../src/echo/app.ts';
import { loadConfig } from '../../src/echo/config.ts';

test('internal errors – a bug answers 500 ECHO_ERR_INTERNAL with a stable fingerprint, counted by obs', async (t) => {
  const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent' }), {
    scenarios: [],
    logger: pino({ level: 'silent' }),
  });
  app.get('/boom', async () => {
    throw new TypeError('a bug');
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const address = app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  const first = await fetch(`${base}/boom`);
  assert.equal(first.status, 500);
  const body = (await first.json()) as { error: { code: string; message: string; fingerprint: string } };
  assert.equal(body.error.code, 'ECHO_ERR_INTERNAL');
  assert.doesNotMatch(body.error.message, /a bug/, 'the message of a bug is not shown to clients');
  assert.match(body.error.fingerprint, /^[0-9a-f]{64}$/);
  const second = (await (await fetch(`${base}/boom`)).json()) as { error: { fingerprint: string } };
  assert.equal(second.error.fingerprint, body.error.fingerprint, 'the same bug keeps its fingerprint');

  const metrics = await (await fetch(`${base}/metrics`)).text();
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith('obs_errors_unhandled_total{') && l.includes(body.error.fingerprint));
  assert.ok(line, 'obs_errors_unhandled_total carries the fingerprint');
  assert.match(line, /exception="TypeError"/);
  assert.match(line, / 2$/);
});
