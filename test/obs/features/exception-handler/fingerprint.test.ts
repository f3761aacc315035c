import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import {
  PROBLEM_CONTENT_TYPE,
  SERVER_ERROR_DETAIL,
} from '../../../../src/obs/features/exception-handler/exception-handler.ts';
import { fingerprintFrames } from '../../../../src/obs/features/exception-handler/fingerprint.ts';
import { fingerprint, obsPlugin, problemErrorHandler } from '../../../../src/obs/index.ts';
import { installOtelSdk, traceServer } from '../../../helpers/otel-sdk.ts';
import { type RunningObsApp, startObsApp } from '../../helpers.ts';

/** The same module in every copy; only the function name differs where a test asks for it. */
function ordersModule(blankLinesOnTop: number, innerName = 'parseOrder'): string {
  return `${'\n'.repeat(blankLinesOnTop)}// orders: a module with a bug
export function ${innerName}(input) {
  if (typeof input !== 'number') throw new TypeError('bad order ' + JSON.stringify(input));
  return input;
}

export function handleOrder(input) {
  return ${innerName}(input);
}
`;
}

type OrdersModule = { handleOrder(input: unknown): unknown };

/** Writes the module into a new directory that looks like a deployed package, and imports it. */
async function deploy(source: string): Promise<OrdersModule> {
  const root = mkdtempSync(join(tmpdir(), 'obs-fingerprint-'));
  mkdirSync(join(root, 'src'));
  writeFileSync(join(root, 'package.json'), '{"name":"orders","type":"module"}\n');
  const file = join(root, 'src', 'orders.mjs');
  writeFileSync(file, source);
  return (await import(pathToFileURL(file).href)) as OrdersModule;
}

/** What the module throws (always from this one call site, so that the callers' frames agree). */
function thrownBy(module: OrdersModule, input: unknown = 'x'): Error {
  try {
    module.handleOrder(input);
  } catch (error) {
    return error as Error;
  }
  throw new Error('did not throw');
}

const deployed = {
  a: await deploy(ordersModule(0)),
  shifted: await deploy(ordersModule(7)),
  renamed: await deploy(ordersModule(0, 'parseInvoice')),
};

test('fingerprint – the same error thrown from shifted lines in two directories keeps its fingerprint; another function changes it', () => {
  const a = thrownBy(deployed.a);
  const shifted = thrownBy(deployed.shifted, 'another message, same bug');
  const renamed = thrownBy(deployed.renamed);
  assert.notEqual(a.stack, shifted.stack, 'the stacks differ: lines and directories');
  assert.match(fingerprint(a), /^[0-9a-f]{64}$/);
  assert.equal(fingerprint(a), fingerprint(shifted));
  assert.notEqual(fingerprint(a), fingerprint(renamed), 'another function, another fingerprint');
  assert.notEqual(fingerprint(a), fingerprint(new RangeError('x')), 'another type, another fingerprint');
  const frames = fingerprintFrames(a);
  assert.deepEqual(frames.slice(0, 2), [
    { fn: 'parseOrder', file: 'src/orders.mjs' },
    { fn: 'handleOrder', file: 'src/orders.mjs' },
  ]);
  for (const frame of frames) {
    assert.doesNotMatch(frame.file, /:\d+/, 'no line or column');
    assert.ok(!frame.file.startsWith('/') && !frame.file.startsWith('file:'), `relative: ${frame.file}`);
    assert.ok(!frame.file.startsWith('node:'), 'no node: frames');
  }
  assert.equal(fingerprintFrames(a, 1).length, 1);
  assert.notEqual(fingerprint(a, 1), fingerprint(a), 'the frame count is part of it');
  assert.match(fingerprint('a thrown string'), /^[0-9a-f]{64}$/, 'any thrown value');
  assert.equal(fingerprint(null), fingerprint(null));
});

/** One app with routes that run each deployed copy, and one whose error is a client error. */
async function ordersApp(options: Parameters<typeof startObsApp>[0], setup?: (app: FastifyInstance) => void) {
  return startObsApp(options, (app) => {
    app.get('/a', async () => deployed.a.handleOrder('a'));
    app.get('/shifted', async () => deployed.shifted.handleOrder('b'));
    app.get('/renamed', async () => deployed.renamed.handleOrder('c'));
    app.get('/missing/:id', async (request) => {
      throw Object.assign(
        new Error(`order ${(request.params as { id: string }).id} not found for jane@example.com`),
        {
          statusCode: 404,
          code: 'ORDER_NOT_FOUND',
        },
      );
    });
    app.post('/orders', async (request) => request.body);
    app.get('/metrics', async (_request, reply) =>
      reply.type(app.obs.registry.contentType).send(await app.obs.registry.metrics()),
    );
    setup?.(app);
  });
}

const unhandledSeries = async (obs: RunningObsApp) =>
  (await (await fetch(`${obs.url}/metrics`)).text())
    .split('\n')
    .filter((l) => l.startsWith('obs_errors_unhandled_total{'));

test('fingerprint – through real HTTP: a problem+json answer, one log line, the span and the metric, same fingerprint for the shifted copy', async (t) => {
  const sdk = installOtelSdk(t);
  const obs = await ordersApp({ problemErrorHandler: true }, (app) => traceServer(app.server, sdk));
  t.after(() => obs.close());

  const problems: Array<Record<string, unknown>> = [];
  for (const path of ['/a', '/shifted', '/renamed']) {
    const response = await fetch(`${obs.url}${path}?token=abc`, { headers: { 'x-request-id': 'ignored' } });
    assert.equal(response.status, 500);
    assert.equal(response.headers.get('content-type'), PROBLEM_CONTENT_TYPE);
    problems.push((await response.json()) as Record<string, unknown>);
  }
  const [a, shifted, renamed] = problems;
  assert.deepEqual(Object.keys(a ?? {}).sort(), [
    'detail',
    'fingerprint',
    'instance',
    'request_id',
    'status',
    'title',
    'trace_id',
    'type',
  ]);
  assert.equal(a?.type, 'about:blank');
  assert.equal(a?.title, 'Internal Server Error');
  assert.equal(a?.status, 500);
  assert.equal(a?.detail, SERVER_ERROR_DETAIL, 'no message, no stack');
  assert.equal(a?.instance, '/a', 'the path, without the query');
  assert.match(String(a?.fingerprint), /^[0-9a-f]{64}$/);
  assert.equal(a?.fingerprint, shifted?.fingerprint, 'shifted lines, another directory: the same bug');
  assert.notEqual(a?.fingerprint, renamed?.fingerprint);
  // the server spans the SDK exported, in the order they ended: /a, /shifted, /renamed
  const spans = await sdk.finishedSpans();
  assert.deepEqual(
    spans.map((s) => s.attributes['url.path']),
    ['/a?token=abc', '/shifted?token=abc', '/renamed?token=abc'],
  );
  assert.equal(a?.trace_id, spans[0]?.spanContext().traceId);
  assert.doesNotMatch(JSON.stringify(problems), /orders\.mjs|at handleOrder|bad order/);

  const span = spans[0];
  const exceptions = span?.events.filter((e) => e.name === 'exception') ?? [];
  assert.equal(exceptions.length, 1);
  assert.equal(exceptions[0]?.attributes?.['exception.type'], 'TypeError');
  assert.equal(span?.attributes['exception.fingerprint'], a?.fingerprint);
  assert.equal(span?.status.code, 2, 'span status ERROR');

  const logged = obs.logger.lines.filter((l) => (l.object as { obs?: string }).obs === 'exception');
  assert.equal(logged.length, 3, 'one line per error');
  const first = logged[0]?.object as { fingerprint?: string; request_id?: string } | undefined;
  assert.equal(first?.fingerprint, a?.fingerprint);
  assert.equal(first?.request_id, a?.request_id);

  assert.deepEqual(
    (await unhandledSeries(obs)).sort(),
    [
      `obs_errors_unhandled_total{exception="TypeError",fingerprint="${a?.fingerprint}"} 2`,
      `obs_errors_unhandled_total{exception="TypeError",fingerprint="${renamed?.fingerprint}"} 1`,
    ].sort(),
  );
});

test('fingerprint – a client error answers a problem with its masked message and code, and is not counted', async (t) => {
  const obs = await ordersApp({ problemErrorHandler: true });
  t.after(() => obs.close());
  const response = await fetch(`${obs.url}/missing/42`, {
    headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
  });
  assert.equal(response.status, 404);
  assert.equal(response.headers.get('content-type'), PROBLEM_CONTENT_TYPE);
  const body = (await response.json()) as Record<string, unknown>;
  assert.equal(body.title, 'Not Found');
  assert.equal(body.detail, 'order 42 not found for [MASKED:email]');
  assert.equal(body.code, 'ORDER_NOT_FOUND');
  assert.equal(body.trace_id, '4bf92f3577b34da6a3ce929d0e0e4736', 'from traceparent when no SDK is active');
  assert.deepEqual(await unhandledSeries(obs), []);
  // A body that is not JSON is fastify's own 400, answered as a problem too.
  const bad = await fetch(`${obs.url}/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{',
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.headers.get('content-type'), PROBLEM_CONTENT_TYPE);
  assert.match(String(((await bad.json()) as { code: string }).code), /^FST_ERR_/);
  assert.deepEqual(await unhandledSeries(obs), []);
});

test('fingerprint – without problemErrorHandler fastify answers as usual, and fingerprints are still recorded', async (t) => {
  const obs = await ordersApp({});
  t.after(() => obs.close());
  const response = await fetch(`${obs.url}/a`);
  assert.equal(response.status, 500);
  assert.match(String(response.headers.get('content-type')), /^application\/json/);
  const body = (await response.json()) as Record<string, unknown>;
  assert.equal(body.statusCode, 500, "fastify's default body");
  assert.equal((await unhandledSeries(obs)).length, 1);
  const snapshot = (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
    features: Record<string, { enabled: boolean; config: Record<string, unknown> }>;
    sections: Record<string, Record<string, unknown>>;
  };
  assert.equal(snapshot.features['exception-handler']?.enabled, true);
  assert.equal(snapshot.features['exception-handler']?.config['fingerprint-frames'], 5);
  assert.equal(snapshot.sections['exception-handler']?.problem_error_handler, 'not requested');
});

test('fingerprint – a handler set before obs is kept, one set after wins, and an app handler can delegate to problemErrorHandler', async (t) => {
  // Before obs: kept, with a warning.
  const before = Fastify();
  before.setErrorHandler((_error, _request, reply) => reply.code(418).send({ mine: true }));
  const warnings: string[] = [];
  await before.register(obsPlugin, {
    env: {},
    registry: new Registry(),
    problemErrorHandler: true,
    logger: { info() {}, warn: (_o, m) => warnings.push(String(m)) },
  });
  before.get('/boom', async () => deployed.a.handleOrder('x'));
  const r1 = await before.inject('/boom');
  assert.equal(r1.statusCode, 418);
  assert.deepEqual(r1.json(), { mine: true });
  assert.ok(warnings.some((w) => /problemErrorHandler not installed/.test(w)));
  assert.equal(
    (
      (await before.inject('/actuator/obs')).json() as {
        sections: Record<string, { problem_error_handler: string }>;
      }
    ).sections['exception-handler']?.problem_error_handler,
    'kept the error handler set before obs',
  );
  await before.close();

  // After obs: the app's handler replaces obs's (fastify warns about the override; obs does not fight it).
  const after = Fastify();
  await after.register(obsPlugin, { env: {}, registry: new Registry(), problemErrorHandler: true });
  after.setErrorHandler((_error, _request, reply) => reply.code(409).send({ later: true }));
  after.get('/boom', async () => deployed.a.handleOrder('x'));
  const r2 = await after.inject('/boom');
  assert.equal(r2.statusCode, 409);
  assert.deepEqual(r2.json(), { later: true });
  await after.close();

  // Delegation from the app's own handler, over real HTTP.
  const obs = await ordersApp({}, (app) => {
    app.setErrorHandler((error, request, reply) => {
      if ((error as { code?: string }).code === 'ORDER_NOT_FOUND')
        return reply.code(404).send({ gone: true });
      return problemErrorHandler(error, request, reply);
    });
  });
  t.after(() => obs.close());
  const mine = await fetch(`${obs.url}/missing/1`);
  assert.deepEqual(await mine.json(), { gone: true });
  const delegated = await fetch(`${obs.url}/a`);
  assert.equal(delegated.status, 500);
  assert.equal(delegated.headers.get('content-type'), PROBLEM_CONTENT_TYPE);
  assert.match(String(((await delegated.json()) as { fingerprint: string }).fingerprint), /^[0-9a-f]{64}$/);
});

test('fingerprint – enabled-when and enabled=false take the feature out: no problem, no record', async (t) => {
  const skipped = await ordersApp({
    problemErrorHandler: true,
    config: { 'exception-handler': { 'enabled-when': { 'header-not-equals': { 'x-synthetic': 'true' } } } },
  });
  t.after(() => skipped.close());
  const synthetic = await fetch(`${skipped.url}/a`, { headers: { 'x-synthetic': 'true' } });
  assert.equal(synthetic.status, 500);
  assert.match(
    String(synthetic.headers.get('content-type')),
    /^application\/json/,
    "fastify's default answer",
  );
  await synthetic.arrayBuffer();
  assert.deepEqual(await unhandledSeries(skipped), []);
  const real = await fetch(`${skipped.url}/a`);
  assert.equal(real.headers.get('content-type'), PROBLEM_CONTENT_TYPE);
  await real.arrayBuffer();
  assert.equal((await unhandledSeries(skipped)).length, 1);

  const off = await ordersApp({ problemErrorHandler: true, env: { OBS_EXCEPTION_HANDLER_ENABLED: 'false' } });
  t.after(() => off.close());
  const response = await fetch(`${off.url}/a`);
  assert.match(String(response.headers.get('content-type')), /^application\/json/);
  await response.arrayBuffer();
  assert.deepEqual(await unhandledSeries(off), []);
  assert.equal(off.logger.lines.filter((l) => (l.object as { obs?: string }).obs === 'exception').length, 0);
});
