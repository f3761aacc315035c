import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Context,
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import {
  traceIdSampled,
  UPGRADABLE_ATTRIBUTE,
  UPGRADED_ATTRIBUTE,
} from '../../../src/obs/features/sampling.ts';
import { traceIdOfTraceparent } from '../../../src/obs/features/trace-guard.ts';
import {
  createErrorUpgradeSpanProcessor,
  createObsSampler,
  loadObsConfig,
  type ObsSpanProcessor,
  SAMPLING_DECISION,
  type UpgradableSpan,
} from '../../../src/obs/index.ts';
import { randomSpanId, randomTraceId } from '../../helpers/otel-sdk.ts';
import { startObsApp } from '../helpers.ts';

const decide = (sampler: ReturnType<typeof createObsSampler>, ctx: Context, traceId = randomTraceId()) =>
  sampler.shouldSample(ctx, traceId, 'GET /orders', SpanKind.SERVER, {}, []).decision;

function withParent(sampled: boolean, isRemote: boolean): Context {
  const parent: SpanContext = {
    traceId: randomTraceId(),
    spanId: randomSpanId(),
    traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote,
  };
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

test('sampling – the ratio is deterministic on the trace id: 10,000 random ids at 0.25 keep 23% to 27%', () => {
  const sampler = createObsSampler({ probability: 0.25, 'prefer-sampling-on-error': false });
  const ids = Array.from({ length: 10_000 }, randomTraceId);
  const kept = ids.filter((id) => decide(sampler, ROOT_CONTEXT, id) === SAMPLING_DECISION.RECORD_AND_SAMPLED);
  const share = kept.length / ids.length;
  assert.ok(share >= 0.23 && share <= 0.27, `kept ${share}`);
  for (const id of ids.slice(0, 500)) {
    assert.equal(
      decide(sampler, ROOT_CONTEXT, id),
      decide(sampler, ROOT_CONTEXT, id),
      'same id, same decision',
    );
    assert.equal(traceIdSampled(id, 0.25), traceIdSampled(id, 0.25));
  }
  // Another process with the same rate agrees on every id; a higher rate keeps a superset.
  const again = createObsSampler({ probability: 0.25, 'prefer-sampling-on-error': false });
  assert.ok(ids.every((id) => decide(again, ROOT_CONTEXT, id) === decide(sampler, ROOT_CONTEXT, id)));
  assert.ok(kept.every((id) => traceIdSampled(id, 0.5)));
  assert.ok(ids.every((id) => traceIdSampled(id, 1)) && !ids.some((id) => traceIdSampled(id, 0)));
});

test('sampling – parent-based: a sampled parent samples, an unsampled one does not, remote and local alike', () => {
  const sampler = createObsSampler({ probability: 0, 'prefer-sampling-on-error': false });
  const all = createObsSampler({ probability: 1, 'prefer-sampling-on-error': false });
  for (const isRemote of [true, false]) {
    assert.equal(
      decide(sampler, withParent(true, isRemote)),
      SAMPLING_DECISION.RECORD_AND_SAMPLED,
      'even at 0',
    );
    assert.equal(decide(all, withParent(false, isRemote)), SAMPLING_DECISION.NOT_RECORD, 'even at 1');
  }
  assert.equal(decide(sampler, ROOT_CONTEXT), SAMPLING_DECISION.NOT_RECORD);
  assert.equal(decide(all, ROOT_CONTEXT), SAMPLING_DECISION.RECORD_AND_SAMPLED);
});

test('sampling – prefer-sampling-on-error RECORDs what the ratio drops, so that an error can upgrade it', () => {
  const prefer = createObsSampler({ probability: 0, 'prefer-sampling-on-error': true });
  const result = prefer.shouldSample(ROOT_CONTEXT, randomTraceId(), 'x', SpanKind.INTERNAL, {}, []);
  assert.deepEqual(result, {
    decision: SAMPLING_DECISION.RECORD,
    attributes: { [UPGRADABLE_ATTRIBUTE]: true },
  });
  assert.equal(decide(prefer, withParent(false, true)), SAMPLING_DECISION.RECORD, 'an unsampled parent too');
  assert.equal(decide(prefer, withParent(true, true)), SAMPLING_DECISION.RECORD_AND_SAMPLED);
  const off = createObsSampler({ enabled: false, probability: 0 });
  assert.equal(
    decide(off, ROOT_CONTEXT),
    SAMPLING_DECISION.RECORD_AND_SAMPLED,
    'disabled: the SDK default, always on',
  );
  assert.match(String(prefer), /TraceIdRatio\{0\}.*preferSamplingOnError=true/);
  // At probability 1 (the default) the ratio drops nothing, but an unsampled parent's spans are
  // dropped: the setting holds there too, and the description says what the setting says.
  const atOne = createObsSampler({ probability: 1 });
  assert.equal(decide(atOne, withParent(false, true)), SAMPLING_DECISION.RECORD, 'an unsampled parent at 1');
  assert.equal(decide(atOne, ROOT_CONTEXT), SAMPLING_DECISION.RECORD_AND_SAMPLED);
  assert.equal(String(atOne), 'ObsSampler{ParentBased{root=TraceIdRatio{1}},preferSamplingOnError=true}');
  assert.equal(
    String(createObsSampler({ probability: 1, 'prefer-sampling-on-error': false })),
    'ObsSampler{ParentBased{root=TraceIdRatio{1}},preferSamplingOnError=false}',
  );
  assert.doesNotThrow(() =>
    prefer.shouldSample(undefined as unknown as Context, 'zz', 'x', SpanKind.INTERNAL, {}, []),
  );
});

test('sampling – the error-upgrade processor exports a recorded span that ended in error, and only that', async () => {
  const exported: UpgradableSpan[] = [];
  let flushed = 0;
  // Like the SDK's BatchSpanProcessor: it exports sampled spans only.
  const exporting: ObsSpanProcessor = {
    onStart() {},
    onEnd(span) {
      if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED) exported.push(span);
    },
    forceFlush: async () => {
      flushed++;
    },
    shutdown: async () => {},
  };
  const processor = createErrorUpgradeSpanProcessor(exporting);
  class EndedSpan implements UpgradableSpan {
    readonly name: string;
    readonly status: { code: number };
    readonly attributes = { 'http.route': '/orders' };
    readonly #ctx: SpanContext;
    constructor(name: string, sampled: boolean, code: number) {
      this.name = name;
      this.status = { code };
      this.#ctx = { traceId: randomTraceId(), spanId: randomSpanId(), traceFlags: sampled ? 1 : 0 };
    }
    spanContext() {
      return this.#ctx;
    }
    get duration() {
      return [0, this.name.length];
    }
  }
  processor.onEnd(new EndedSpan('sampled-ok', true, SpanStatusCode.OK));
  processor.onEnd(new EndedSpan('recorded-ok', false, SpanStatusCode.UNSET));
  processor.onEnd(new EndedSpan('recorded-error', false, SpanStatusCode.ERROR));
  await processor.forceFlush();
  assert.deepEqual(
    exported.map((s) => (s as EndedSpan).name),
    ['sampled-ok', 'recorded-error'],
  );
  const upgraded = exported[1] as EndedSpan;
  assert.equal(upgraded.spanContext().traceFlags & TraceFlags.SAMPLED, TraceFlags.SAMPLED);
  assert.equal(upgraded.attributes[UPGRADED_ATTRIBUTE as keyof typeof upgraded.attributes], true);
  assert.equal(upgraded.attributes['http.route'], '/orders');
  assert.deepEqual(upgraded.duration, [0, 'recorded-error'.length], 'getters and private fields still work');
  assert.equal(flushed, 1);
});

test('sampling – through real HTTP: OTEL_TRACES_SAMPLER_ARG sets the rate, inbound traceparent decides, the snapshot shows the sampler', async (t) => {
  const resolved = loadObsConfig({ env: { OTEL_TRACES_SAMPLER_ARG: '0.25' } });
  const sampler = createObsSampler(resolved.config);
  const obs = await startObsApp({ resolved }, (app) => {
    // What an SDK does for a server span: the parent from `traceparent`, or a new trace id.
    app.get('/decide', async (request) => {
      const header = request.headers.traceparent;
      const parentTraceId = traceIdOfTraceparent(header);
      const ctx =
        parentTraceId === undefined
          ? ROOT_CONTEXT
          : trace.setSpanContext(ROOT_CONTEXT, {
              traceId: parentTraceId,
              spanId: String(header).split('-')[2] ?? '',
              traceFlags: Number.parseInt(String(header).split('-')[3] ?? '0', 16),
              isRemote: true,
            });
      return { decision: decide(sampler, ctx, parentTraceId ?? String(request.headers['x-trace-id'])) };
    });
  });
  t.after(() => obs.close());
  const ask = async (headers: Record<string, string>) =>
    ((await (await fetch(`${obs.url}/decide`, { headers })).json()) as { decision: number }).decision;
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  assert.equal(await ask({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` }), 2, 'the caller sampled it');
  assert.equal(
    await ask({ traceparent: `00-${traceId}-00f067aa0ba902b7-00` }),
    1,
    'the caller did not: RECORD',
  );
  let sampled = 0;
  for (let i = 0; i < 200; i++) if ((await ask({ 'x-trace-id': randomTraceId() })) === 2) sampled++;
  assert.ok(sampled > 20 && sampled < 80, `about a quarter of new traces: ${sampled}/200`);

  const snapshot = (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
    features: Record<string, { enabled: boolean; config: Record<string, unknown> }>;
    sections: Record<string, Record<string, unknown>>;
  };
  assert.equal(snapshot.features.sampling?.enabled, true);
  assert.equal(snapshot.features.sampling?.config.probability, 0.25);
  assert.deepEqual(snapshot.sections.sampling, {
    enabled: true,
    sampler: 'ObsSampler{ParentBased{root=TraceIdRatio{0.25}},preferSamplingOnError=true}',
    probability: 0.25,
    probability_source: 'env OTEL_TRACES_SAMPLER_ARG',
    prefer_sampling_on_error: true,
    applies_to: 'the SDK the application builds with createObsSampler(config)',
  });
});

test('sampling – /actuator/obs: the sampler description says what prefer-sampling-on-error is set to, at the default rate too', async (t) => {
  for (const prefer of [true, false]) {
    const obs = await startObsApp({ config: { sampling: { 'prefer-sampling-on-error': prefer } } });
    t.after(() => obs.close());
    const snapshot = (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
      sections: Record<string, { sampler: string; prefer_sampling_on_error: boolean; probability: number }>;
    };
    const section = snapshot.sections['sampling']!;
    assert.equal(section.probability, 1);
    assert.equal(section.prefer_sampling_on_error, prefer);
    assert.equal(
      section.sampler,
      `ObsSampler{ParentBased{root=TraceIdRatio{1}},preferSamplingOnError=${prefer}}`,
    );
  }
});
