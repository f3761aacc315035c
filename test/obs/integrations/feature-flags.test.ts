import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Hook, InMemoryProvider, OpenFeature } from '@openfeature/server-sdk';
import { Registry } from 'prom-client';
import { contextFields } from '../../../src/obs/features/logging/logging.ts';
import { createFeatureFlagHook, createObs, type ObsConfigInput } from '../../../src/obs/index.ts';
import {
  FEATURE_FLAG_ATTRIBUTES as A,
  FEATURE_FLAG_EVENT,
  flagResultText,
  MAX_FLAG_VALUE_CHARS,
  MAX_FLAGS_PER_REQUEST,
  RequestFlags,
} from '../../../src/obs/integrations/feature-flags.ts';
import { installOtelSdk, startTracedObsApp } from '../../helpers/otel-sdk.ts';
import { capturingLogger, startObsApp } from '../helpers.ts';

/**
 * Feature-flag evaluation correlation with the real OpenFeature server SDK (its in-memory
 * provider, bound to a domain per test) and the real OpenTelemetry SDK: each evaluation is a
 * `feature_flag.evaluation` event on the request's span, a wide event and part of the request's
 * log context.
 */

const FLAGS = {
  'new-checkout': { variants: { on: true, off: false }, defaultVariant: 'on', disabled: false },
  banner: {
    variants: { short: 'hello', long: 'x'.repeat(500) },
    defaultVariant: 'long',
    disabled: false,
  },
  limits: { variants: { base: { rps: 10 } }, defaultVariant: 'base', disabled: false },
};

let domains = 0;
/** A client of the real SDK bound to a fresh domain with the in-memory provider and `hook`. */
async function flagClient(hook: Hook, flags: object = FLAGS) {
  const domain = `obs-test-${++domains}`;
  await OpenFeature.setProviderAndWait(domain, new InMemoryProvider(flags as never));
  const client = OpenFeature.getClient(domain);
  client.addHooks(hook);
  return client;
}

const ENABLED: ObsConfigInput = { 'feature-flags': { enabled: true } };

test('feature-flags – evaluations in a request: span events, wide events and the log context', async (t) => {
  const sdk = installOtelSdk(t);
  let fields: unknown;
  const app = await startTracedObsApp(t, sdk, { config: ENABLED }, async (fastify) => {
    const client = await flagClient(createFeatureFlagHook(fastify.obs) as Hook);
    fastify.get('/checkout', async () => {
      const on = await client.getBooleanValue('new-checkout', false);
      const banner = await client.getStringValue('banner', 'none');
      const missing = await client.getStringValue('no-such-flag', 'fallback');
      await client.getObjectValue('limits', {});
      fields = contextFields();
      return { on, banner: banner.length, missing };
    });
  });
  const response = await fetch(`${app.url}/checkout`);
  assert.deepEqual(await response.json(), { on: true, banner: 500, missing: 'fallback' });

  const [span] = await app.serverSpans();
  const events = span?.events.filter((e) => e.name === FEATURE_FLAG_EVENT) ?? [];
  assert.equal(events.length, 4, 'one span event per evaluation, not two');
  assert.deepEqual(events[0]?.attributes, {
    [A.key]: 'new-checkout',
    [A.provider]: 'in-memory',
    [A.variant]: 'on',
    [A.reason]: 'STATIC',
  });
  assert.equal(events[1]?.attributes?.[A.variant], 'long', 'the variant, not the long value');
  assert.deepEqual(events[2]?.attributes, {
    [A.key]: 'no-such-flag',
    [A.provider]: 'in-memory',
    [A.errorType]: 'flag_not_found',
  });
  // the log context: the flags of this request, variant per key
  assert.deepEqual((fields as { feature_flags?: unknown }).feature_flags, {
    'new-checkout': 'on',
    banner: 'long',
    'no-such-flag': 'error',
    limits: 'base',
  });
  // wide events: counted and logged
  assert.match(await app.registry.metrics(), /obs_events_total\{event="feature_flag.evaluation"\} 4/);
  assert.equal(app.logger.lines.filter((l) => l.message === `event ${FEATURE_FLAG_EVENT}`).length, 4);
  // the snapshot's live figures
  const snapshot = (await (await fetch(`${app.url}/actuator/obs`)).json()) as {
    sections: Record<string, { evaluations: number; errors: number; flags: Array<{ key: string }> }>;
  };
  const section = snapshot.sections['feature-flags'];
  assert.equal(section?.evaluations, 4);
  assert.equal(section?.errors, 1);
  assert.deepEqual(section?.flags.map((f) => f.key).sort(), [
    'banner',
    'limits',
    'new-checkout',
    'no-such-flag',
  ]);
});

test('feature-flags – without a variant the value is shown short; the request list is bounded', async (t) => {
  const sdk = installOtelSdk(t);
  const many: Record<string, unknown> = {};
  for (let i = 0; i < MAX_FLAGS_PER_REQUEST + 5; i++) {
    many[`f${i}`] = { variants: { v: i }, defaultVariant: 'v', disabled: false };
  }
  let fields: { feature_flags?: Record<string, string> } = {};
  const app = await startTracedObsApp(t, sdk, { config: ENABLED }, async (fastify) => {
    const hook = createFeatureFlagHook(fastify.obs);
    const client = await flagClient(hook as Hook, many);
    fastify.get('/many', async () => {
      for (let i = 0; i < MAX_FLAGS_PER_REQUEST + 5; i++) await client.getNumberValue(`f${i}`, -1);
      // a provider that gives no variant: the value, cut
      hook.after({ flagKey: 'raw' }, { value: 'y'.repeat(200) });
      fields = contextFields();
      return 'ok';
    });
  });
  await (await fetch(`${app.url}/many`)).text();
  assert.equal(Object.keys(fields.feature_flags ?? {}).length, MAX_FLAGS_PER_REQUEST);
  assert.equal(fields.feature_flags?.f0, 'v');
  assert.equal(fields.feature_flags?.raw, undefined, 'past the bound: not kept');
  const [span] = await app.serverSpans();
  const raw = span?.events.find((e) => e.attributes?.[A.key] === 'raw');
  assert.equal(raw?.attributes?.[A.value], `${'y'.repeat(MAX_FLAG_VALUE_CHARS)}…`);
  assert.equal(raw?.attributes?.[A.variant], undefined);
});

test('feature-flags – with wide events off, the span event alone', async (t) => {
  const sdk = installOtelSdk(t);
  const app = await startTracedObsApp(
    t,
    sdk,
    { config: { ...ENABLED, 'wide-events': { enabled: false } } },
    async (fastify) => {
      const client = await flagClient(createFeatureFlagHook(fastify.obs) as Hook);
      fastify.get('/one', async () => String(await client.getBooleanValue('new-checkout', false)));
    },
  );
  assert.equal(await (await fetch(`${app.url}/one`)).text(), 'true');
  const [span] = await app.serverSpans();
  assert.equal(span?.events.filter((e) => e.name === FEATURE_FLAG_EVENT).length, 1);
  assert.doesNotMatch(await app.registry.metrics(), /obs_events_total\{/);
});

test('feature-flags – off by default: the hook records nothing and the evaluation is unchanged', async (t) => {
  const running = await startObsApp({}, async (fastify) => {
    const client = await flagClient(createFeatureFlagHook(fastify.obs) as Hook);
    fastify.get('/x', async () => ({
      on: await client.getBooleanValue('new-checkout', false),
      flags: contextFields().feature_flags ?? null,
    }));
  });
  t.after(() => running.close());
  assert.deepEqual(await (await fetch(`${running.url}/x`)).json(), { on: true, flags: null });
  const snapshot = (await (await fetch(`${running.url}/actuator/obs`)).json()) as {
    features: Record<string, { status: string; enabled: boolean }>;
    sections: Record<string, { enabled: boolean; evaluations: number }>;
  };
  assert.deepEqual(snapshot.features['feature-flags'], {
    ...snapshot.features['feature-flags'],
    status: 'built',
    enabled: false,
  });
  assert.equal(snapshot.sections['feature-flags']?.evaluations, 0);
  assert.doesNotMatch(await running.registry.metrics(), /obs_events_total\{/);
});

test('feature-flags – outside a request: the wide event only; a broken logger never fails the evaluation', async (t) => {
  const logger = capturingLogger();
  let broken = false;
  const obs = createObs({
    env: {},
    registry: new Registry(),
    config: ENABLED,
    logger: {
      info: (o, m) => {
        if (broken) throw new Error('logger down');
        logger.info(o, m);
      },
      warn: (o, m) => logger.warn(o, m),
    },
  });
  t.after(() => obs.close());
  const client = await flagClient(createFeatureFlagHook(obs) as Hook);
  assert.equal(await client.getBooleanValue('new-checkout', false), true);
  assert.equal(logger.lines.filter((l) => l.message === `event ${FEATURE_FLAG_EVENT}`).length, 1);
  broken = true;
  assert.equal(await client.getBooleanValue('new-checkout', false), true);
});

test('feature-flags – pure parts: result text and the per-request list', () => {
  assert.equal(flagResultText({ variant: 'blue', value: 'x' }), 'blue');
  assert.equal(flagResultText({ value: false }), 'false');
  assert.equal(flagResultText({ value: { a: 1 } }), '{"a":1}');
  assert.equal(flagResultText({}), undefined);
  const flags = new RequestFlags();
  for (let i = 0; i < MAX_FLAGS_PER_REQUEST; i++) flags.record(`k${i}`, 'a');
  flags.record('k0', 'b'); // a re-evaluation replaces its result
  flags.record('extra', 'c');
  assert.equal(flags.size, MAX_FLAGS_PER_REQUEST);
  assert.equal(flags.toJSON().k0, 'b');
  assert.equal(flags.dropped, 1);
});
