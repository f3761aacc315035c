/**
 * obs under the real OpenTelemetry SDK (`test/helpers/otel-sdk.ts`): span attributes, span events
 * and exceptions are read from what the SDK recorded (the in-memory exporter), baggage from the
 * SDK's context (`propagation.getBaggage(context.active())`) or from the `baggage` header a
 * downstream service received.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { type Baggage, context, propagation, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { type Consumer, Kafka, logLevel, type Producer } from 'kafkajs';
import { FAN_OUT_SPAN_ATTRIBUTES } from '../../src/obs/features/fan-out.ts';
import { RETRY_DEPTH_BAGGAGE_KEY } from '../../src/obs/features/retry/retry-depth.ts';
import { DEADLINE_HEADER } from '../../src/obs/features/timeout-budget/timeout-budget.ts';
import {
  DEADLINE_BAGGAGE_KEY,
  TIMEOUT_BUDGET_SPAN_ATTRIBUTES,
} from '../../src/obs/features/timeout-budget/timeout-budget-hook.ts';
import { currentObsContext, instrumentKafka } from '../../src/obs/index.ts';
import { MOCK_CONSUMER_SETTINGS, requireKcat, startKafkaMock } from '../helpers/kafka-mock.ts';
import { injectHeaders, installOtelSdk, startTracedObsApp, type TracedObsApp } from '../helpers/otel-sdk.ts';
import { within } from '../helpers/runtime.ts';

const ATTR = TIMEOUT_BUDGET_SPAN_ATTRIBUTES;

/** The entries of a baggage, as `{ key: value }`. */
const entriesOf = (baggage: Baggage | undefined): Record<string, string> =>
  Object.fromEntries((baggage?.getAllEntries() ?? []).map(([key, entry]) => [key, entry.value]));

/** The active baggage's entries, where this is called. */
const activeBaggage = () => entriesOf(propagation.getBaggage(context.active()));

/** The entries of a W3C `baggage` header, as `{ key: value }` (properties dropped). */
function baggageHeader(header: string | string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const member of String(header ?? '').split(',')) {
    const [pair = ''] = member.split(';');
    const at = pair.indexOf('=');
    if (at > 0)
      out[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return out;
}

function only(spans: ReadableSpan[]): ReadableSpan {
  assert.equal(spans.length, 1, `one server span: ${spans.map((s) => s.name).join(', ')}`);
  return spans[0] as ReadableSpan;
}

test('otel sdk – a request with Obs-Timeout-Ms: 1000: its server span records the budget’s deadline, remaining and source', async (t) => {
  const sdk = installOtelSdk(t);
  const app = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/work', async () => currentObsContext()?.timeoutBudget ?? null);
  });
  const before = Date.now();
  const response = await fetch(`${app.url}/work`, { headers: { 'Obs-Timeout-Ms': '1000' } });
  const after = Date.now();
  assert.equal(response.status, 200);
  const budget = (await response.json()) as { deadlineEpochMs: number };

  const span = only(await app.serverSpans());
  const deadline = span.attributes[ATTR.deadline];
  assert.equal(deadline, budget.deadlineEpochMs, 'the deadline the request context holds');
  assert.ok(
    typeof deadline === 'number' && deadline >= before + 950 && deadline <= after + 950,
    `${deadline}`,
  );
  const remaining = span.attributes[ATTR.remaining];
  assert.ok(typeof remaining === 'number' && remaining > 0 && remaining <= 950, `remaining ${remaining}`);
  assert.equal(span.attributes[ATTR.source], 'remaining-header');
});

test('otel sdk – the handler’s baggage holds the deadline; an injected outbound call carries it to the next service, whose span is a child and whose budget has the same deadline', async (t) => {
  const sdk = installOtelSdk(t);
  const downstream = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/b', async (request) => ({
      headers: { baggage: request.headers.baggage, deadline: request.headers[DEADLINE_HEADER.toLowerCase()] },
      baggage: activeBaggage(),
      budget: currentObsContext()?.timeoutBudget ?? null,
    }));
  });
  const upstream = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/a', async () => {
      const baggage = activeBaggage();
      const next = await fetch(`${downstream.url}/b`, { headers: injectHeaders() });
      return { baggage, next: await next.json() };
    });
  });

  const response = await fetch(`${upstream.url}/a`, { headers: { 'Obs-Timeout-Ms': '5000' } });
  assert.equal(response.status, 200);
  const { baggage, next } = (await response.json()) as {
    baggage: Record<string, string>;
    next: {
      headers: { baggage?: string; deadline?: string };
      baggage: Record<string, string>;
      budget: { deadlineEpochMs: number; source: string } | null;
    };
  };

  const a = only(await upstream.serverSpans());
  const deadline = a.attributes[ATTR.deadline];
  assert.equal(typeof deadline, 'number');
  assert.deepEqual(
    baggage,
    { [DEADLINE_BAGGAGE_KEY]: String(deadline), [RETRY_DEPTH_BAGGAGE_KEY]: '0' },
    'the handler’s active baggage',
  );
  assert.equal(
    baggageHeader(next.headers.baggage)[DEADLINE_BAGGAGE_KEY],
    String(deadline),
    'the baggage header',
  );
  assert.equal(next.headers.deadline, String(deadline), DEADLINE_HEADER);
  assert.equal(
    next.budget?.deadlineEpochMs,
    deadline,
    'the next service’s budget: the same absolute deadline',
  );
  assert.equal(next.budget?.source, 'deadline-header');
  assert.equal(next.baggage[DEADLINE_BAGGAGE_KEY], String(deadline), 'the next service’s baggage');

  const b = only(await downstream.serverSpans());
  assert.equal(b.spanContext().traceId, a.spanContext().traceId, 'one trace');
  assert.equal(b.parentSpanContext?.spanId, a.spanContext().spanId, 'a child of the first server span');
  assert.equal(b.parentSpanContext?.isRemote, true);
  assert.equal(b.attributes[ATTR.deadline], deadline);
  assert.equal(b.attributes[ATTR.source], 'deadline-header');
});

test('otel sdk – inbound baggage from upstream survives: obs adds its entry and drops none; the trace continues', async (t) => {
  const sdk = installOtelSdk(t);
  const downstream = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/b', async (request) => baggageHeader(request.headers.baggage));
  });
  const app = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/a', async () => {
      const baggage = activeBaggage();
      const next = await fetch(`${downstream.url}/b`, { headers: injectHeaders() });
      return { baggage, forwarded: await next.json() };
    });
  });
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const parentSpanId = '00f067aa0ba902b7';
  const response = await fetch(`${app.url}/a`, {
    headers: {
      traceparent: `00-${traceId}-${parentSpanId}-01`,
      baggage: 'upstream.tenant=acme,session.id=s%201',
      'Obs-Timeout-Ms': '3000',
    },
  });
  assert.equal(response.status, 200);
  const body = (await response.json()) as {
    baggage: Record<string, string>;
    forwarded: Record<string, string>;
  };
  const span = only(await app.serverSpans());
  const expected = {
    'upstream.tenant': 'acme',
    'session.id': 's 1',
    [DEADLINE_BAGGAGE_KEY]: String(span.attributes[ATTR.deadline]),
    [RETRY_DEPTH_BAGGAGE_KEY]: '0',
  };
  assert.deepEqual(body.baggage, expected, 'the handler’s baggage');
  assert.deepEqual(body.forwarded, expected, 'what the next service received');
  assert.equal(span.spanContext().traceId, traceId);
  assert.equal(span.parentSpanContext?.spanId, parentSpanId);
});

test('otel sdk – work bound with obs.bind and run later, outside the request, sees its span and baggage', async (t) => {
  const sdk = installOtelSdk(t);
  const queue: Array<
    () => { traceId: string | undefined; spanId: string | undefined; baggage: Record<string, string> }
  > = [];
  const look = () => ({
    traceId: trace.getSpanContext(context.active())?.traceId,
    spanId: trace.getSpanContext(context.active())?.spanId,
    baggage: activeBaggage(),
  });
  const app = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/enqueue', async () => {
      queue.push(app.obs.bind(look));
      return 'queued';
    });
  });
  assert.equal((await fetch(`${app.url}/enqueue`, { headers: { 'Obs-Timeout-Ms': '2000' } })).status, 200);
  const span = only(await app.serverSpans());

  assert.deepEqual(look(), { traceId: undefined, spanId: undefined, baggage: {} }, 'outside: nothing');
  const seen = await new Promise<ReturnType<typeof look>>((resolve) =>
    setImmediate(() => resolve(queue[0]!())),
  );
  assert.deepEqual(seen, {
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    baggage: {
      [DEADLINE_BAGGAGE_KEY]: String(span.attributes[ATTR.deadline]),
      [RETRY_DEPTH_BAGGAGE_KEY]: '0',
    },
  });
});

test('otel sdk – a handler that throws: the server span records the exception, exception.fingerprint and status ERROR', async (t) => {
  const sdk = installOtelSdk(t);
  const app = await startTracedObsApp(t, sdk, { problemErrorHandler: true }, (app) => {
    app.get('/boom', async () => {
      throw new TypeError('bad order');
    });
  });
  const response = await fetch(`${app.url}/boom`);
  assert.equal(response.status, 500);
  const problem = (await response.json()) as { fingerprint: string; trace_id: string };
  assert.match(problem.fingerprint, /^[0-9a-f]{64}$/);

  const span = only(await app.serverSpans());
  assert.equal(span.attributes['exception.fingerprint'], problem.fingerprint);
  assert.equal(problem.trace_id, span.spanContext().traceId);
  assert.equal(span.status.code, SpanStatusCode.ERROR);
  const exception = span.events.find((e) => e.name === 'exception');
  assert.equal(exception?.attributes?.['exception.type'], 'TypeError');
  assert.equal(span.attributes['http.response.status_code'], 500);
});

test('otel sdk – wide events land as span events on the request’s recorded span', async (t) => {
  const sdk = installOtelSdk(t);
  const app = await startTracedObsApp(t, sdk, {}, (app) => {
    app.post('/orders', async () => {
      await new Promise((resolve) => setImmediate(resolve)); // an async hop: the span stays active across it
      app.obs.event('order.placed', { items: 3, vip: true, total: 12.5 });
      app.obs.event('order.paid', { method: 'card' });
      return 'ok';
    });
  });
  assert.equal((await fetch(`${app.url}/orders`, { method: 'POST' })).status, 200);
  const span = only(await app.serverSpans());
  assert.deepEqual(
    span.events.map((e) => ({ name: e.name, attributes: e.attributes })),
    [
      { name: 'order.placed', attributes: { items: 3, vip: true, total: 12.5 } },
      { name: 'order.paid', attributes: { method: 'card' } },
    ],
  );
});

test('otel sdk – Kafka (mock cluster): a record produced in a traced request carries its deadline; the listener’s baggage holds it', async (t) => {
  if (!requireKcat(t)) return;
  const sdk = installOtelSdk(t);
  const mock = await startKafkaMock();
  const kafka = new Kafka({
    clientId: 'obs-otel-sdk-test',
    brokers: mock.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3_000,
    requestTimeout: 15_000,
    retry: { retries: 3, initialRetryTime: 100 },
  });
  const clients: Array<Producer | Consumer> = [];
  // Clients first, the mock last (test/helpers/kafka-mock.ts).
  t.after(async () => {
    await Promise.allSettled(clients.map((c) => within(c.disconnect(), 'disconnect', 10_000)));
    await mock.stop();
  });
  const topic = `otel-${randomUUID().slice(0, 8)}`;
  let producer!: Producer;
  const app = await startTracedObsApp(t, sdk, {}, (app) => {
    instrumentKafka(kafka, app.obs);
    producer = kafka.producer({ allowAutoTopicCreation: true });
    clients.push(producer);
    app.get('/produce', async () => {
      await producer.send({ topic, messages: [{ key: 'k', value: 'v' }] });
      return 'sent';
    });
  });
  await within(producer.connect(), 'producer connect');

  const consumer = kafka.consumer({ groupId: `otel-${randomUUID().slice(0, 8)}`, ...MOCK_CONSUMER_SETTINGS });
  clients.push(consumer);
  let received!: (seen: { baggage: Record<string, string>; deadline: number | undefined }) => void;
  const seen = new Promise<{ baggage: Record<string, string>; deadline: number | undefined }>((resolve) => {
    received = resolve;
  });
  await within(consumer.connect(), 'consumer connect');
  await within(consumer.subscribe({ topics: [topic], fromBeginning: true }), 'subscribe');
  await within(
    consumer.run({
      eachMessage: async () => {
        await new Promise((resolve) => setImmediate(resolve)); // an async hop: the context crosses it
        received({ baggage: activeBaggage(), deadline: currentObsContext()?.timeoutBudget?.deadlineEpochMs });
      },
    }),
    'run',
  );

  assert.equal((await fetch(`${app.url}/produce`, { headers: { 'Obs-Timeout-Ms': '20000' } })).status, 200);
  const span = only(await app.serverSpans());
  const deadline = span.attributes[ATTR.deadline];
  assert.equal(typeof deadline, 'number');
  const got = await within(seen, 'the record');
  assert.equal(got.deadline, deadline, 'the listener’s budget');
  assert.deepEqual(
    got.baggage,
    { [DEADLINE_BAGGAGE_KEY]: String(deadline), [RETRY_DEPTH_BAGGAGE_KEY]: '0' },
    'the listener’s active baggage',
  );
});

test('otel sdk – fan-out: the server span records the outbound calls and distinct hosts of its request', async (t) => {
  const sdk = installOtelSdk(t);
  const targets = await Promise.all(
    [0, 1].map(() =>
      startTracedObsApp(t, sdk, {}, (app) => {
        app.get('/t', async () => 'ok');
      }),
    ),
  );
  const [one, two] = targets as [TracedObsApp, TracedObsApp];
  const app = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/fan', async () => {
      for (const url of [one.url, one.url, two.url]) await (await fetch(`${url}/t`)).text();
      return 'done';
    });
  });
  const response = await fetch(`${app.url}/fan`);
  assert.equal(await response.text(), 'done');
  const span = only(await app.serverSpans());
  assert.equal(span.attributes[FAN_OUT_SPAN_ATTRIBUTES.fanOut], 3);
  assert.equal(span.attributes[FAN_OUT_SPAN_ATTRIBUTES.dependencies], 2);
});

test('otel sdk – retry depth: the server span records the inbound depth; a retry’s injected call carries the raised depth in baggage and header', async (t) => {
  const sdk = installOtelSdk(t);
  const seen: Array<{ header: string | undefined; baggage: string | undefined }> = [];
  const downstream = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/flaky', async (request, reply) => {
      seen.push({
        header: request.headers['obs-retry-depth'] as string | undefined,
        baggage: baggageHeader(request.headers.baggage)[RETRY_DEPTH_BAGGAGE_KEY],
      });
      return reply.code(seen.length === 1 ? 503 : 200).send('x');
    });
  });
  const app = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/call', async () =>
      app.obs.retry(
        async () => {
          const response = await fetch(`${downstream.url}/flaky`, { headers: injectHeaders() });
          if (response.status !== 200) throw new Error(`status ${response.status}`);
          return response.text();
        },
        { attempts: 3, delayMs: 0 },
      ),
    );
  });
  const response = await fetch(`${app.url}/call`, { headers: { 'Obs-Retry-Depth': '2' } });
  assert.equal(await response.text(), 'x');
  assert.equal(only(await app.serverSpans()).attributes[RETRY_DEPTH_BAGGAGE_KEY], 2);
  assert.deepEqual(seen, [
    { header: '2', baggage: '2' },
    { header: '3', baggage: '3' },
  ]);
});

test('otel sdk – priority and tenant: on the server span, in the handler’s baggage and on the injected call', async (t) => {
  const sdk = installOtelSdk(t);
  const downstream = await startTracedObsApp(t, sdk, {}, (app) => {
    app.get('/b', async (request) => ({
      priority: request.headers['obs-priority'] ?? null,
      tenant: request.headers['obs-tenant-id'] ?? null,
      baggage: baggageHeader(request.headers.baggage),
    }));
  });
  const config = { priority: { enabled: true }, tenant: { enabled: true } };
  const app = await startTracedObsApp(t, sdk, { config }, (app) => {
    app.get('/a', async () => ({
      baggage: activeBaggage(),
      next: await (await fetch(`${downstream.url}/b`, { headers: injectHeaders() })).json(),
    }));
  });
  const response = await fetch(`${app.url}/a`, {
    headers: { 'Obs-Priority': 'HIGH', 'Obs-Tenant-Id': 'acme' },
  });
  const body = (await response.json()) as {
    baggage: Record<string, string>;
    next: { priority: string; tenant: string; baggage: Record<string, string> };
  };
  const span = only(await app.serverSpans());
  assert.equal(span.attributes['obs.priority'], 'high');
  assert.equal(span.attributes['obs.tenant'], 'acme');
  for (const baggage of [body.baggage, body.next.baggage]) {
    assert.equal(baggage['obs.priority'], 'high', JSON.stringify(baggage));
    assert.equal(baggage['obs.tenant.id'], 'acme', JSON.stringify(baggage));
  }
  assert.deepEqual([body.next.priority, body.next.tenant], ['high', 'acme']);
});
