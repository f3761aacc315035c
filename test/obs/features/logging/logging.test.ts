import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import pino from 'pino';
import { Registry } from 'prom-client';
import { MASK, MASK_LIMITS, MASKS, maskLogLine } from '../../../../src/obs/features/logging/masking.ts';
import {
  loadObsConfig,
  maskSecrets,
  maskText,
  obsFastifyOptions,
  obsLoggerOptions,
  obsPlugin,
  REQUEST_ID_LOG_LABEL,
} from '../../../../src/obs/index.ts';
import { installOtelSdk, traceServer } from '../../../helpers/otel-sdk.ts';

/** Secrets fed to the app; none of them may reach a log line. */
const SECRET = {
  email: 'jane.doe@example.com',
  bearer: 'eyRealTokenValue.abc-123_XYZ',
  card: '4111 1111 1111 1111',
  cardDashed: '5500-0000-0000-0004',
  cardPlain: '378282246310005',
  ssn: '123-45-6789',
  password: 'hunter2-pw-value',
  apiKey: 'ak_live_51HxyzSECRET',
  cookie: 'session=cookie-secret-value',
  clientSecret: 'cs-very-secret-value',
  privateKey: 'pk-private-material',
  queryToken: 'qtok-secret-value',
  basic: 'dXNlcjpwYXNzd29yZA==',
} as const;
/** An order id of 16 digits that fails the Luhn check: it must stay visible. */
const ORDER_ID = '4111111111111112';

/** A writable that keeps every line pino writes, parsed. */
function lineSink() {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') raw.push(line);
      done();
    },
  });
  return { raw, stream, parsed: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
}

function assertNoSecret(lines: readonly string[]): void {
  const all = lines.join('\n');
  for (const [name, secret] of Object.entries(SECRET)) {
    assert.ok(
      !all.includes(secret),
      `${name} (${secret}) reached the log:\n${lines.filter((l) => l.includes(secret)).join('\n')}`,
    );
  }
  // The digits of the card numbers, whatever separators a serializer may have kept.
  for (const card of [SECRET.card, SECRET.cardDashed, SECRET.cardPlain]) {
    assert.ok(!all.replace(/[ -]/g, '').includes(card.replace(/[ -]/g, '')), `card ${card} reached the log`);
  }
}

test('logging – maskSecrets masks emails, bearer tokens, Luhn-valid cards, SSNs and secret-named fields, and keeps order ids', () => {
  const masked = maskSecrets({
    msg: `mail ${SECRET.email}, card ${SECRET.card}, order ${ORDER_ID}, ssn ${SECRET.ssn}`,
    headers: {
      Authorization: `Bearer ${SECRET.bearer}`,
      'X-API-Key': SECRET.apiKey,
      'set-cookie': [SECRET.cookie],
      accept: 'application/json',
    },
    nested: { deeper: { Password: SECRET.password, client_secret: SECRET.clientSecret, count: 3 } },
    body: JSON.stringify({ private_key: SECRET.privateKey, items: [{ apikey: SECRET.apiKey }] }),
    buffer: Buffer.from(`{"passwd":"${SECRET.password}","to":"${SECRET.email}"}`),
    text: `Authorization: Basic ${SECRET.basic}\nnext line stays`,
    url: `/login?token=${SECRET.queryToken}&page=2`,
    empty: { password: '' },
  }) as Record<string, Record<string, unknown>>;
  assertNoSecret([JSON.stringify(masked)]);
  assert.equal(masked.msg, `mail ${MASKS.email}, card ${MASKS.card}, order ${ORDER_ID}, ssn ${MASKS.ssn}`);
  assert.deepEqual(masked.headers, {
    Authorization: MASK,
    'X-API-Key': MASK,
    'set-cookie': MASK,
    accept: 'application/json',
  });
  assert.deepEqual(masked.nested, { deeper: { Password: MASK, client_secret: MASK, count: 3 } });
  assert.deepEqual(
    JSON.parse(masked.body as unknown as string),
    {
      private_key: MASK,
      items: [{ apikey: MASK }],
    },
    'JSON text stays JSON',
  );
  assert.equal(masked.buffer, `{"passwd":"${MASK}","to":"${MASKS.email}"}`, 'a Buffer is masked as text');
  assert.equal(masked.text, `Authorization: ${MASK}\nnext line stays`);
  assert.equal(masked.url, `/login?token=${MASK}&page=2`);
  assert.deepEqual(masked.empty, { password: '' }, 'an empty value says nothing');
  assert.equal(maskText(`Bearer ${SECRET.bearer}`), MASKS.bearer);
  assert.equal(maskText('tokens_used=5 token_type=bearer'), 'tokens_used=5 token_type=bearer');
  assert.equal(maskText('{"password":"hunt'), `{"password":"${MASK}"`, 'a body cut mid-value');
  assert.equal(
    maskText('{"data":"{\\"password\\":\\"x1\\",\\"n\\":1}"}'),
    `{"data":"{\\"password\\":\\"${MASK}\\",\\"n\\":1}"}`,
    'JSON escaped inside JSON text',
  );
});

test('logging – every line of a real fastify app is masked: messages, headers, bodies, bindings, errors and URLs', async (t) => {
  const sink = lineSink();
  const config = loadObsConfig({ env: {} }).config;
  const fastifyOptions = obsFastifyOptions({ config });
  const app = Fastify({
    ...fastifyOptions,
    logger: { ...fastifyOptions.logger, stream: sink.stream },
    logController: new LogController({ requestIdLogLabel: REQUEST_ID_LOG_LABEL }),
  });
  await app.register(obsPlugin, { env: {}, registry: new Registry() });
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );
  app.post('/body', async (request) => {
    request.log.info({ headers: request.headers, body: request.body }, 'request body');
    return 'ok';
  });
  app.get('/messages', async (request) => {
    request.log.info('user %s paid with %s for order %s', SECRET.email, SECRET.card, ORDER_ID);
    request.log.warn(`upstream said Authorization: Bearer ${SECRET.bearer}`);
    request.log.info(`ssn ${SECRET.ssn} and card ${SECRET.cardDashed}`);
    request.log.child({ api_key: SECRET.apiKey, user: SECRET.email }).info('child logger line');
    request.log.error(new Error(`lookup failed for ${SECRET.email} with ${SECRET.cardPlain}`));
    request.log.info({ nested: { deep: { client_secret: SECRET.clientSecret } } }, 'nested');
    return 'ok';
  });
  const url = await listen(app);
  t.after(() => app.close());

  const headers = {
    authorization: `Bearer ${SECRET.bearer}`,
    cookie: SECRET.cookie,
    'x-api-key': SECRET.apiKey,
    'x-user-email': SECRET.email,
    'x-request-id': 'req-fixed-1',
  };
  const bodies: Array<[string, string | Uint8Array]> = [
    [
      'application/json',
      JSON.stringify({
        password: SECRET.password,
        card: SECRET.card,
        user: { email: SECRET.email },
        order: ORDER_ID,
      }),
    ],
    ['text/plain', `password=${SECRET.password}&ssn=${SECRET.ssn}&note=Bearer ${SECRET.bearer}`],
    [
      'application/octet-stream',
      new TextEncoder().encode(
        `{"private_key":"${SECRET.privateKey}","to":"${SECRET.email}","order":"${ORDER_ID}"}`,
      ),
    ],
  ];
  for (const [type, body] of bodies) {
    const response = await fetch(`${url}/body`, {
      method: 'POST',
      headers: { ...headers, 'content-type': type },
      body,
    });
    assert.equal(response.status, 200, await response.text());
  }
  assert.equal((await fetch(`${url}/messages?token=${SECRET.queryToken}`, { headers })).status, 200);

  const lines = sink.parsed();
  assertNoSecret(sink.raw);
  const bodyLines = lines.filter((l) => l.msg === 'request body');
  assert.equal(bodyLines.length, 3);
  for (const line of bodyLines) {
    assert.equal(line.request_id, 'req-fixed-1', 'the request id, from X-Request-ID');
    const logged = line.headers as Record<string, unknown>;
    assert.equal(logged.authorization, MASK);
    assert.equal(logged.cookie, MASK);
    assert.equal(logged['x-api-key'], MASK);
    assert.equal(logged['x-user-email'], MASKS.email);
  }
  assert.deepEqual(bodyLines[0]?.body, {
    password: MASK,
    card: MASKS.card,
    user: { email: MASKS.email },
    order: ORDER_ID,
  });
  assert.match(String(bodyLines[1]?.body), /^password=\[MASKED\]&ssn=\[MASKED:ssn\]&note=Bearer \[MASKED\]$/);
  assert.equal(
    bodyLines[2]?.body,
    `{"private_key":"${MASK}","to":"${MASKS.email}","order":"${ORDER_ID}"}`,
    'a Buffer body is logged as masked text',
  );
  const paid = lines.find((l) => String(l.msg).startsWith('user '));
  assert.equal(paid?.msg, `user ${MASKS.email} paid with ${MASKS.card} for order ${ORDER_ID}`);
  const child = lines.find((l) => l.msg === 'child logger line');
  assert.equal(child?.api_key, MASK, 'child bindings are masked');
  assert.equal(child?.user, MASKS.email);
  const error = lines.find((l) => l.level === 50);
  assert.match(
    String((error?.err as { message?: string } | undefined)?.message),
    /\[MASKED:email\].*\[MASKED:card\]/,
  );
  const incoming = lines.find(
    (l) => l.msg === 'incoming request' && String((l.req as { url: string }).url).startsWith('/messages'),
  );
  assert.equal(
    (incoming?.req as { url?: string } | undefined)?.url,
    `/messages?token=${MASK}`,
    "fastify's req serializer too",
  );
});

test('logging – trace_id and span_id come from the active span, and are absent without one', async (t) => {
  const sdk = installOtelSdk(t);
  const sink = lineSink();
  const app = Fastify({
    logger: { ...obsLoggerOptions({ config: loadObsConfig({ env: {} }).config }), stream: sink.stream },
  });
  // only a request with x-span gets a span
  traceServer(app.server, sdk, { ignore: (request) => typeof request.headers['x-span'] !== 'string' });
  app.get('/work', async (request) => {
    await new Promise((resolve) => setImmediate(resolve)); // an async hop: the span stays active across it
    request.log.info('after an await');
    return 'ok';
  });
  const url = await listen(app);
  t.after(() => app.close());

  await fetch(`${url}/work`, { headers: { 'x-span': 'a' } });
  await fetch(`${url}/work`);
  const lines = sink.parsed().filter((l) => l.msg === 'after an await');
  assert.equal(lines.length, 2);
  const spans = await sdk.finishedSpans();
  assert.equal(spans.length, 1, 'one span: the request with x-span');
  const span = spans[0]?.spanContext();
  assert.match(String(span?.traceId), /^[0-9a-f]{32}$/);
  assert.equal(lines[0]?.trace_id, span?.traceId);
  assert.equal(lines[0]?.span_id, span?.spanId);
  assert.equal(lines[0]?.trace_flags, '01');
  assert.ok(!('trace_id' in (lines[1] ?? {})) && !('span_id' in (lines[1] ?? {})), 'no span, no ids');
});

test('logging – the switches: pii-masking-enabled=false keeps lines, enabled=false returns the base options', () => {
  const config = (env: Record<string, string>) => loadObsConfig({ env }).config;
  const render = (options: pino.LoggerOptions) => {
    const sink = lineSink();
    pino(options, sink.stream).info({ password: SECRET.password }, `mail ${SECRET.email}`);
    return sink.raw.join('\n');
  };
  assert.ok(!render(obsLoggerOptions({ config: config({}) })).includes(SECRET.password));
  const unmasked = render(obsLoggerOptions({ config: config({ OBS_LOGGING_PII_MASKING_ENABLED: 'false' }) }));
  assert.ok(unmasked.includes(SECRET.password) && unmasked.includes(SECRET.email));
  const base: pino.LoggerOptions = { level: 'warn' };
  assert.equal(obsLoggerOptions({ config: config({ OBS_LOGGING_ENABLED: 'false' }), base }), base);
  // The application's own hooks still run, after masking.
  const seen: string[] = [];
  const composed = obsLoggerOptions({
    config: config({}),
    base: {
      hooks: {
        streamWrite: (s) => {
          seen.push(s);
          return s;
        },
      },
      mixin: () => ({ app: 'orders' }),
    },
  });
  const out = render(composed);
  assert.ok(seen.length === 1 && !seen[0]?.includes(SECRET.email));
  assert.match(out, /"app":"orders"/);
  assert.equal(
    obsFastifyOptions({ config: config({ OBS_CONTEXT_REQUEST_ID_HEADER: 'X-Correlation-ID' }) })
      .requestIdHeader,
    'x-correlation-id',
  );
});

test('logging – masking is bounded and never throws: huge strings, deep, wide and circular values', () => {
  const start = performance.now();
  const huge = `${'a'.repeat(MASK_LIMITS.maxStringChars * 4)} ${SECRET.email}`;
  const cut = maskText(huge);
  assert.ok(cut.length < MASK_LIMITS.maxStringChars + 100, 'cut at the limit');
  assert.match(cut, /…\[TRUNCATED \d+ chars\]$/);
  for (const hostile of [
    '\\'.repeat(60_000),
    'a@'.repeat(30_000),
    '1 '.repeat(30_000),
    '"password'.repeat(7_000),
  ]) {
    assert.equal(typeof maskText(hostile), 'string');
  }
  let deep: Record<string, unknown> = {};
  const root = deep;
  for (let i = 0; i < 10_000; i++) {
    const next = {};
    deep.a = next;
    deep = next;
  }
  assert.match(JSON.stringify(maskSecrets(root)), /TRUNCATED: too deep/);
  const circular: Record<string, unknown> = { email: SECRET.email };
  circular.self = circular;
  assert.deepEqual(maskSecrets(circular), { email: MASKS.email, self: '[Circular]' });
  const wide = maskSecrets(Array.from({ length: 1_000_000 }, () => SECRET.email)) as unknown[];
  assert.ok(wide.length <= MASK_LIMITS.maxNodes + 1);
  const throwing = {
    get password() {
      throw new Error('getter');
    },
  };
  assert.doesNotThrow(() => maskSecrets(throwing));
  assert.doesNotThrow(() => maskLogLine('not json at all Bearer abc'));
  assert.equal(maskLogLine('not json at all Bearer abc'), `not json at all ${MASKS.bearer}`);
  const elapsed = performance.now() - start;
  assert.ok(elapsed < 5000, `bounded work took ${elapsed}ms`);
});

test('logging – a field named pwd is masked in a log line, in JSON text and in a query string', () => {
  const line = JSON.stringify({ level: 30, msg: 'login', pwd: 'hunter2', user: 'ann' });
  const masked = JSON.parse(maskLogLine(line)) as Record<string, unknown>;
  assert.equal(masked['pwd'], '[MASKED]');
  assert.equal(masked['user'], 'ann');
  const text = maskLogLine(
    JSON.stringify({ level: 30, msg: 'GET /login?user=ann&pwd=hunter2 body {"pwd":"hunter2"}' }),
  );
  assert.doesNotMatch(text, /hunter2/);
  assert.match(text, /user=ann/);
});
