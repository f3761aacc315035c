import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { buildApp } from '../../src/echo/app.ts';
import { loadConfig } from '../../src/echo/config.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, type SendOptions, send as sendTo } from '../helpers/http.ts';
import { until } from '../helpers/runtime.ts';

const send = (echo: RunningEcho, path: string, options?: SendOptions): Promise<Answer> =>
  sendTo(echo.url + path, options);

function postScenarios(echo: RunningEcho, body: unknown, type = 'application/json'): Promise<Answer> {
  return send(echo, '/scenario', {
    method: 'POST',
    headers: { 'Content-Type': type },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function getScenarios(echo: RunningEcho): Promise<unknown> {
  const res = await send(echo, '/scenario');
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  return JSON.parse(res.text);
}

async function statuses(echo: RunningEcho, path: string, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((await send(echo, path)).status);
  return out;
}

interface ErrorBody {
  error: {
    code: string;
    message: string;
    request_id: string;
    details?: Array<{ field: string; message: string }>;
  };
}

function parseError(res: Answer, status: number, code: string): ErrorBody['error'] {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = JSON.parse(res.text) as ErrorBody;
  assert.equal(body.error.code, code);
  assert.equal(body.error.request_id, res.headers['x-request-id']);
  return body.error;
}

const ORDERS = [
  {
    path: '/orders',
    responses: [
      {
        status: 200,
        body: '{"orders":[]}',
        headers: { 'Content-Type': 'application/json', 'X-Step': 'one' },
      },
      { status: 503, body: 'try again', delay: '300ms' },
      { status: 429, body: 'slow down', headers: { 'Retry-After': '7' } },
    ],
  },
];

test('scenario routes – GET /scenario is an empty JSON array at first', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  assert.deepEqual(await getScenarios(echo), []);
});

test('scenario routes – POST a JSON array answers "scenarios updated" and GET shows the set', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const set = [...ORDERS, { path: '/flaky', responses: [{ status: 500 }, { status: 200 }] }];
  const res = await postScenarios(echo, set);
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.deepEqual(JSON.parse(res.text), { status: 'scenarios updated', count: 2 });
  assert.deepEqual(await getScenarios(echo), set);
});

test('scenario routes – requests cycle through the responses in order, with status, body, headers and delay', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  assert.equal((await postScenarios(echo, ORDERS)).status, 200);

  const first = await send(echo, '/orders');
  assert.equal(first.status, 200);
  assert.equal(first.text, '{"orders":[]}');
  assert.match(String(first.headers['content-type']), /^application\/json/);
  assert.equal(first.headers['x-step'], 'one');
  assert.equal(first.headers['x-echo-fault'], 'scenario', 'no delay asked, none applied');

  const second = await send(echo, '/orders');
  assert.equal(second.status, 503);
  assert.equal(second.text, 'try again');
  assert.equal(second.headers['x-echo-fault'], 'scenario,delay');
  assert.equal(second.headers['x-step'], undefined, 'headers belong to their own response');
  assert.ok(second.ms >= 290, `delay of 300ms asked, took ${second.ms} ms`);

  const third = await send(echo, '/orders', { method: 'POST', body: 'ignored' });
  assert.equal(third.status, 429, 'any method on the path takes the next response');
  assert.equal(third.text, 'slow down');
  assert.equal(third.headers['retry-after'], '7');

  // Wrap-around: after the last response comes the first again.
  const fourth = await send(echo, '/orders?page=2');
  assert.equal(fourth.status, 200, 'the query is not part of the matched path');
  assert.equal(fourth.text, '{"orders":[]}');
  assert.deepEqual(await statuses(echo, '/orders', 4), [503, 429, 200, 503]);
});

test('scenario routes – a ranged delay falls inside its range', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await postScenarios(echo, [{ path: '/ranged', responses: [{ status: 204, delay: '200-400ms' }] }]);
  const res = await send(echo, '/ranged');
  assert.equal(res.status, 204);
  assert.ok(res.ms >= 190 && res.ms < 1000, `took ${res.ms} ms, expected 200-400`);
});

test('scenario routes – a response without body echoes the request as usual, with the scripted status', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await postScenarios(echo, [{ path: '/bodiless', responses: [{ status: 202 }] }]);
  const get = await send(echo, '/bodiless');
  assert.equal(get.status, 202);
  assert.match(get.text, /^GET \/bodiless HTTP\/1\.1\n/);
  const post = await send(echo, '/bodiless', {
    method: 'POST',
    headers: { 'Content-Type': 'text/csv' },
    body: 'a,b',
  });
  assert.equal(post.status, 202);
  assert.equal(post.text, 'a,b');
  assert.match(String(post.headers['content-type']), /^text\/csv/);
});

test('scenario routes – a new POST replaces every scenario and restarts every cycle', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await postScenarios(echo, [
    { path: '/a', responses: [{ status: 201 }, { status: 202 }, { status: 203 }] },
    { path: '/gone', responses: [{ status: 500, body: 'scripted' }] },
  ]);
  assert.deepEqual(await statuses(echo, '/a', 2), [201, 202]);

  const set = [{ path: '/a', responses: [{ status: 201 }, { status: 202 }, { status: 203 }] }];
  assert.deepEqual(JSON.parse((await postScenarios(echo, set)).text), {
    status: 'scenarios updated',
    count: 1,
  });
  assert.deepEqual(await statuses(echo, '/a', 4), [201, 202, 203, 201], 'the cycle starts again');
  const gone = await send(echo, '/gone');
  assert.equal(gone.status, 200);
  assert.equal(gone.headers['x-echo-fault'], undefined);
  assert.match(gone.text, /^GET \/gone HTTP\/1\.1\n/);
  assert.deepEqual(await getScenarios(echo), set);

  assert.deepEqual(JSON.parse((await postScenarios(echo, [])).text), {
    status: 'scenarios updated',
    count: 0,
  });
  assert.deepEqual(await getScenarios(echo), []);
  assert.equal((await send(echo, '/a')).status, 200);
});

test('scenario routes – per-request headers beat the scenario', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await postScenarios(echo, [
    {
      path: '/scripted',
      responses: [{ status: 503, body: 'scripted', headers: { 'Content-Type': 'application/json' } }],
    },
  ]);
  const status = await send(echo, '/scripted', { headers: { 'X-Echo-Status': '200' } });
  assert.equal(status.status, 200, 'X-Echo-Status overrides the scenario status');
  assert.equal(status.text, 'scripted');

  const type = await send(echo, '/scripted', { headers: { 'X-Echo-Content-Type': 'text/html' } });
  assert.equal(type.status, 503);
  assert.match(String(type.headers['content-type']), /^text\/html/);

  const error = await send(echo, '/scripted', { headers: { 'X-Echo-Error': '418' } });
  assert.equal(error.status, 418);
  assert.equal(error.headers['x-echo-fault'], 'error', 'the error answered; no scenario response was taken');
  assert.notEqual(error.text, 'scripted');

  const delayed = await send(echo, '/scripted', { headers: { 'X-Echo-Delay': '200ms' } });
  assert.equal(delayed.status, 503);
  assert.ok(delayed.ms >= 190, `header delay applies with the scenario, took ${delayed.ms} ms`);
});

test('scenario routes – paths without a scenario are echoed normally', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await postScenarios(echo, ORDERS);
  const other = await send(echo, '/orders/1');
  assert.equal(other.status, 200);
  assert.equal(other.headers['x-echo-fault'], undefined);
  assert.match(other.text, /^GET \/orders\/1 HTTP\/1\.1\n/);
  const upper = await send(echo, '/ORDERS', { method: 'PUT', body: 'mirror' });
  assert.equal(upper.status, 200, 'matching is exact and case-sensitive');
  assert.equal(upper.text, 'mirror');
  // The echo of other paths did not advance the scenario.
  assert.equal((await send(echo, '/orders')).status, 200);
  assert.equal((await send(echo, '/orders')).status, 503);
});

test('scenario routes – POST YAML with Content-Type application/yaml replaces the set', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const yaml = [
    '# scripted from YAML',
    '- path: /from-yaml',
    '  responses:',
    '    - status: 207',
    "      body: 'multi'",
    '      headers: { X-From: yaml }',
    '    - status: 208',
    '',
  ].join('\n');
  for (const type of ['application/yaml', 'application/x-yaml', 'text/yaml']) {
    const res = await postScenarios(echo, yaml, type);
    assert.equal(res.status, 200, `${type}: ${res.text}`);
    assert.deepEqual(JSON.parse(res.text), { status: 'scenarios updated', count: 1 });
  }
  assert.deepEqual(await getScenarios(echo), [
    {
      path: '/from-yaml',
      responses: [{ status: 207, body: 'multi', headers: { 'X-From': 'yaml' } }, { status: 208 }],
    },
  ]);
  const first = await send(echo, '/from-yaml');
  assert.equal(first.status, 207);
  assert.equal(first.text, 'multi');
  assert.equal(first.headers['x-from'], 'yaml');
  assert.equal((await send(echo, '/from-yaml')).status, 208);
});

test('scenario routes – invalid input is a 400 ECHO_ERR_INVALID_SCENARIOS; the old set and its cycle stay', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const good = [{ path: '/keep', responses: [{ status: 201 }, { status: 202 }, { status: 203 }] }];
  await postScenarios(echo, good);
  assert.equal((await send(echo, '/keep')).status, 201);

  const cases: Array<{ name: string; body: unknown; fields: string[] }> = [
    { name: 'not an array', body: { path: '/x', responses: [{ status: 200 }] }, fields: [''] },
    { name: 'empty responses', body: [{ path: '/x', responses: [] }], fields: ['/0/responses'] },
    {
      name: 'status 700',
      body: [{ path: '/x', responses: [{ status: 700 }] }],
      fields: ['/0/responses/0/status'],
    },
    {
      name: 'status 99',
      body: [{ path: '/x', responses: [{ status: 99 }] }],
      fields: ['/0/responses/0/status'],
    },
    {
      name: 'bad delay',
      body: [{ path: '/x', responses: [{ status: 200, delay: 'soon' }] }],
      fields: ['/0/responses/0/delay'],
    },
    {
      name: 'non-string header value',
      body: [{ path: '/x', responses: [{ status: 200, headers: { 'X-Count': 5 } }] }],
      fields: ['/0/responses/0/headers/X-Count'],
    },
    { name: 'path without /', body: [{ path: 'x', responses: [{ status: 200 }] }], fields: ['/0/path'] },
  ];
  for (const { name, body, fields } of cases) {
    const error = parseError(await postScenarios(echo, body), 400, 'ECHO_ERR_INVALID_SCENARIOS');
    assert.ok(Array.isArray(error.details), `${name}: details listed`);
    assert.deepEqual(
      error.details?.map((d) => d.field),
      fields,
      `${name}: ${JSON.stringify(error.details)}`,
    );
    for (const detail of error.details ?? []) assert.ok(detail.message.length > 0);
  }

  assert.deepEqual(await getScenarios(echo), good, 'the old set stays');
  assert.deepEqual(await statuses(echo, '/keep', 3), [202, 203, 201], 'the old cycle continues where it was');
});

test('scenario routes – several problems at once are all listed', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await postScenarios(echo, ORDERS);
  const body = [
    { path: 'no-slash', responses: [{ status: 200 }] },
    { path: '/ok', responses: [] },
    {
      path: '/many',
      responses: [
        { status: 700 },
        { status: 200, delay: 'later' },
        { status: 200, headers: { 'X-A': 1, 'X-B': true } },
      ],
    },
  ];
  const error = parseError(await postScenarios(echo, body), 400, 'ECHO_ERR_INVALID_SCENARIOS');
  const fields = (error.details ?? []).map((d) => d.field);
  for (const expected of [
    '/0/path',
    '/1/responses',
    '/2/responses/0/status',
    '/2/responses/1/delay',
    '/2/responses/2/headers/X-A',
    '/2/responses/2/headers/X-B',
  ]) {
    assert.ok(fields.includes(expected), `${expected} missing from ${JSON.stringify(fields)}`);
  }
  assert.equal(fields.length, 6, JSON.stringify(error.details));
  for (const field of ['/0/path', '/2/responses/0/status']) {
    assert.ok(error.message.includes(field), `the message names ${field}: ${error.message}`);
  }
  assert.deepEqual(await getScenarios(echo), ORDERS);
});

test('scenario routes – invalid YAML, bad JSON and other media types are refused; the old set stays', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await postScenarios(echo, ORDERS);
  assert.equal((await send(echo, '/orders')).status, 200);

  const invalidYaml = parseError(
    await postScenarios(echo, '- path: /x\n  responses:\n    - status: 700\n', 'application/yaml'),
    400,
    'ECHO_ERR_INVALID_SCENARIOS',
  );
  assert.deepEqual(
    invalidYaml.details?.map((d) => d.field),
    ['/0/responses/0/status'],
  );
  const brokenYaml = await postScenarios(echo, '- path: [unclosed\n', 'application/yaml');
  assert.equal(brokenYaml.status, 400);
  assert.equal(JSON.parse(brokenYaml.text).error.code, 'ECHO_ERR_INVALID_SCENARIOS');

  parseError(await postScenarios(echo, '[{"path": "/x",'), 400, 'ECHO_ERR_INVALID_JSON');
  parseError(
    await postScenarios(echo, JSON.stringify(ORDERS), 'text/plain'),
    415,
    'ECHO_ERR_UNSUPPORTED_MEDIA_TYPE',
  );
  // A JSON object shaped like the YAML parser's output is still just a JSON object, not an array.
  parseError(
    await postScenarios(echo, { yaml: '- path: /x\n  responses: [{status: 200}]\n' }),
    400,
    'ECHO_ERR_INVALID_SCENARIOS',
  );

  assert.deepEqual(await getScenarios(echo), ORDERS);
  assert.equal((await send(echo, '/orders')).status, 503, 'the old cycle continues');
});

test('scenario routes – a scenario cannot script the service’s own routes', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await postScenarios(echo, [{ path: '/health', responses: [{ status: 500, body: 'scripted' }] }]);
  const health = await send(echo, '/health');
  assert.equal(health.status, 200);
  assert.equal(JSON.parse(health.text).status, 'healthy');
});

// --- The scenario file ---

function tempFile(t: { after(fn: () => void): void }, content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'echo-scenarios-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'scenarios.yaml');
  writeFileSync(file, content);
  return file;
}

/** Replaces the file the way an editor or a ConfigMap update does: a new file renamed over it. */
function rewrite(file: string, content: string): void {
  const next = `${file}.tmp`;
  writeFileSync(next, content);
  renameSync(next, file);
}

/** Whether `check` came to hold within `ms` (polled); the caller asserts it, with its own message. */
function waitFor(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  return until('the check', check, ms, 50).then(
    () => true,
    () => false,
  );
}

const FILE_V1 = '- path: /file\n  responses:\n    - status: 201\n      body: v1\n    - status: 202\n';
const FILE_V2 =
  '- path: /file\n  responses:\n    - status: 211\n      body: v2\n- path: /second\n  responses: [{ status: 299 }]\n';

test('scenario routes – ECHO_SCENARIO_FILE is loaded at startup', async (t) => {
  const file = tempFile(t, FILE_V1);
  const echo = await startEcho({ ECHO_SCENARIO_FILE: file });
  t.after(() => echo.close());
  assert.deepEqual(await getScenarios(echo), [
    { path: '/file', responses: [{ status: 201, body: 'v1' }, { status: 202 }] },
  ]);
  const first = await send(echo, '/file');
  assert.equal(first.status, 201);
  assert.equal(first.text, 'v1');
  assert.equal(first.headers['x-echo-fault'], 'scenario');
  assert.equal((await send(echo, '/file')).status, 202);
});

test('scenario routes – a valid rewrite of the file is served within a bounded wait', async (t) => {
  const file = tempFile(t, FILE_V1);
  const echo = await startEcho({ ECHO_SCENARIO_FILE: file });
  t.after(() => echo.close());
  assert.equal((await send(echo, '/file', { headers: { 'X-Echo-History-Enabled': 'false' } })).status, 201);

  writeFileSync(file, FILE_V2); // in place
  const applied = await waitFor(async () => ((await getScenarios(echo)) as unknown[]).length === 2, 10_000);
  assert.ok(applied, 'the rewritten file was not applied within 3 s');
  const first = await send(echo, '/file');
  assert.equal(first.status, 211, 'the new set starts at its first response');
  assert.equal(first.text, 'v2');
  assert.equal((await send(echo, '/second')).status, 299);

  rewrite(file, FILE_V1); // renamed over it
  const back = await waitFor(async () => ((await getScenarios(echo)) as unknown[]).length === 1, 10_000);
  assert.ok(back, 'the renamed-over file was not applied within 3 s');
  assert.equal((await send(echo, '/file')).status, 201);
  assert.equal((await send(echo, '/second')).status, 200);
});

test('scenario routes – an invalid rewrite of the file keeps the old set; a later valid one applies', async (t) => {
  const file = tempFile(t, FILE_V1);
  const echo = await startEcho({ ECHO_SCENARIO_FILE: file }, { captureLogs: true });
  t.after(() => echo.close());
  const before = await getScenarios(echo);
  assert.equal((await send(echo, '/file')).status, 201);

  writeFileSync(file, '- path: /file\n  responses:\n    - status: 700\n');
  const warnings = () =>
    echo.logs.filter((l) => l['level'] === 40 && String(l['msg']).includes('scenario file')).length;
  const warned = await waitFor(async () => warnings() >= 1, 10_000);
  assert.ok(warned, `no warning logged: ${JSON.stringify(echo.logs)}`);
  assert.deepEqual(await getScenarios(echo), before);
  assert.equal((await send(echo, '/file')).status, 202, 'the old cycle continues');

  writeFileSync(file, 'not: [valid yaml');
  // The broken YAML is read (a warning of its own says so) and changes nothing.
  assert.ok(
    await waitFor(async () => warnings() >= 2, 10_000),
    `no second warning: ${JSON.stringify(echo.logs)}`,
  );
  assert.deepEqual(await getScenarios(echo), before);

  writeFileSync(file, FILE_V2);
  assert.ok(
    await waitFor(async () => ((await getScenarios(echo)) as unknown[]).length === 2, 10_000),
    'the watcher stopped after an invalid file',
  );
});

test('scenario routes – POST /scenario replaces what the file loaded', async (t) => {
  const file = tempFile(t, FILE_V1);
  const echo = await startEcho({ ECHO_SCENARIO_FILE: file });
  t.after(() => echo.close());
  await postScenarios(echo, [{ path: '/posted', responses: [{ status: 226 }] }]);
  assert.equal((await send(echo, '/posted')).status, 226);
  assert.equal((await send(echo, '/file')).status, 200);
});

test('scenario routes – buildApp rejects with ECHO_ERR_CONFIG for an explicit missing or invalid file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'echo-scenarios-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const missing = join(dir, 'missing.yaml');
  await assert.rejects(startEcho({ ECHO_SCENARIO_FILE: missing }), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'ECHO_ERR_CONFIG');
    assert.match(err.message, /ECHO_SCENARIO_FILE/);
    assert.ok(err.message.includes(missing), err.message);
    return true;
  });
  const invalid = join(dir, 'invalid.yaml');
  writeFileSync(invalid, '- path: nope\n  responses: []\n');
  await assert.rejects(startEcho({ ECHO_SCENARIO_FILE: invalid }), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'ECHO_ERR_CONFIG');
    assert.match(err.message, /\/0\/path/);
    assert.match(err.message, /\/0\/responses/);
    return true;
  });
});

test('scenario routes – a missing default scenario file means no scenarios', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'echo-scenarios-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The default name, not set explicitly: as if ECHO_SCENARIO_FILE were unset in an empty directory.
  const config = { ...loadConfig({ LOG_LEVEL: 'silent' }), scenarioFile: join(dir, 'scenarios.yaml') };
  assert.equal(config.scenarioFileExplicit, false);
  const app = await buildApp(config);
  t.after(() => app.close());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const res = await request(`http://127.0.0.1:${port}/scenario`);
  assert.equal(res.statusCode, 200);
  assert.deepEqual(await res.body.json(), []);
});

test('scenario routes – a YAML alias bomb (a small body that expands to gigabytes) is a 400; the old set stays', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  assert.equal((await postScenarios(echo, ORDERS)).status, 200);
  const before = await getScenarios(echo);
  // One 1 MB body, repeated by aliases: 50 responses of 20 scenarios = 1000 MB once expanded.
  const yaml = [
    `- path: /bomb-0`,
    `  responses: &r`,
    ...Array.from({ length: 50 }, (_, i) =>
      i === 0 ? `    - &b { status: 200, body: '${'x'.repeat(1_000_000)}' }` : '    - *b',
    ),
    ...Array.from({ length: 19 }, (_, i) => `- { path: /bomb-${i + 1}, responses: *r }`),
    '',
  ].join('\n');
  const res = await postScenarios(echo, yaml, 'application/yaml');
  assert.equal(res.status, 400, res.text.slice(0, 200));
  const error = (JSON.parse(res.text) as { error: { code: string; message: string } }).error;
  assert.equal(error.code, 'ECHO_ERR_INVALID_SCENARIOS');
  assert.match(error.message, /more than 16777216 characters in all/);
  assert.deepEqual(await getScenarios(echo), before);
  assert.equal((await send(echo, '/health')).status, 200);
});
