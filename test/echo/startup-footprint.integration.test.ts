import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

/**
 * What a run that never replays does not load (ADR 0013): undici (the replay client, about 30 MB
 * resident). A generated certificate needs no package since ADR 0049 (node's crypto makes it).
 * Checked in a process of its own, through the packages node has loaded (their CommonJS cache).
 */
const SCRIPT = `
import { createRequire } from 'node:module';
import { loadObsConfig } from '@echo-chaos/obs';
import { buildApp } from './src/echo/app.ts';
import { loadConfig } from './src/echo/config.ts';
import { ECHO_OBS_DEFAULTS } from './src/echo/metrics.ts';
const require = createRequire(import.meta.url);
const loaded = () => {
  const packages = new Set();
  for (const file of Object.keys(require.cache)) {
    const match = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file);
    if (match) packages.add(match[1]);
  }
  return [...packages];
};
const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent' }), { obs: loadObsConfig({ env: {}, defaults: ECHO_OBS_DEFAULTS }) });
await app.ready();
const atStartup = loaded();
await app.inject({ method: 'GET', url: '/x', headers: { 'x-request-id': 'footprint-1' } });
const replayed = await app.inject({ method: 'POST', url: '/replay', payload: { id: 'footprint-1', target: 'http://127.0.0.1:9' } });
const afterReplay = loaded();
await app.close();
process.stdout.write(JSON.stringify({ atStartup, afterReplay, replayStatus: replayed.statusCode }));
`;

test('startup footprint – undici loads only when a replay needs it, ioredis only with shared state', () => {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT], {
    cwd: new URL('../..', import.meta.url),
    encoding: 'utf8',
  });
  const { atStartup, afterReplay, replayStatus } = JSON.parse(out.slice(out.indexOf('{"atStartup"'))) as {
    atStartup: string[];
    afterReplay: string[];
    replayStatus: number;
  };
  assert.ok(atStartup.includes('fastify'), 'the cache shows what was loaded');
  assert.ok(!atStartup.includes('undici'), `undici at startup: ${atStartup.join(' ')}`);
  // The shared state's client (issue #33) is loaded only with ECHO_STATE_URL.
  assert.ok(
    !atStartup.includes('ioredis') && !afterReplay.includes('ioredis'),
    'ioredis without ECHO_STATE_URL',
  );
  assert.equal(replayStatus, 502, 'the replay went out (to a closed port)');
  assert.ok(afterReplay.includes('undici'), 'a replay loads undici');
});
