import assert from 'node:assert/strict';
import { test } from 'node:test';
import Pyroscope from '@pyroscope/nodejs';
import { instrumentPyroscope } from '../../../src/obs/index.ts';
import {
  PROFILING_SPAN_ATTRIBUTES as P,
  PYROSCOPE_PROFILE_TYPE,
  profileUrl,
} from '../../../src/obs/integrations/profiling.ts';
import { installOtelSdk, startTracedObsApp } from '../../helpers/otel-sdk.ts';
import { startObsApp } from '../helpers.ts';

/**
 * Continuous-profiling correlation with the real OpenTelemetry SDK and the real
 * `@pyroscope/nodejs`: the request's root span carries `profile.id` and `pyroscope.profile_id` (its
 * span id) and, with a server URL, a deep link; with Pyroscope handed to obs and its wall profiler
 * started, the request runs with the `span_id` label. Pyroscope's exporter is pointed at a closed
 * loopback port and its flush interval at an hour: nothing leaves the machine.
 */

type ProfilingSection = {
  enabled: boolean;
  pyroscope: boolean;
  stamped: number;
  without_span: number;
  labelled: number;
  label_failures: number;
};

async function section(url: string): Promise<ProfilingSection> {
  const snapshot = (await (await fetch(`${url}/actuator/obs`)).json()) as {
    sections: Record<string, ProfilingSection>;
  };
  const found = snapshot.sections.profiling;
  assert.ok(found !== undefined);
  return found;
}

test('profiling – the root span of a request carries its profile id twice and the deep link', async (t) => {
  const sdk = installOtelSdk(t);
  const app = await startTracedObsApp(
    t,
    sdk,
    {
      config: { profiling: { enabled: true, 'pyroscope-url': 'https://pyroscope.example.com/' } },
      serviceName: 'checkout',
    },
    (fastify) => {
      fastify.get('/work', async () => 'done');
    },
  );
  assert.equal(await (await fetch(`${app.url}/work`)).text(), 'done');
  const [span] = await app.serverSpans();
  assert.ok(span !== undefined);
  const id = span.spanContext().spanId;
  assert.equal(span.attributes[P.profileId], id);
  assert.equal(span.attributes[P.pyroscopeProfileId], id);
  const link = new URL(String(span.attributes[P.profileUrl]));
  assert.equal(`${link.origin}${link.pathname}`, 'https://pyroscope.example.com/explore');
  assert.equal(
    link.searchParams.get('query'),
    `${PYROSCOPE_PROFILE_TYPE}{service_name="checkout",span_id="${id}"}`,
  );
  assert.equal(link.searchParams.get('from'), 'now-1h');
  const figures = await section(app.url);
  assert.equal(figures.enabled, true);
  assert.equal(figures.stamped, 2, 'this request and the snapshot request');
});

test('profiling – without a URL no link; off by default nothing; without a span nothing', async (t) => {
  const sdk = installOtelSdk(t);
  const withoutUrl = await startTracedObsApp(t, sdk, { config: { profiling: { enabled: true } } }, (f) => {
    f.get('/a', async () => 'a');
  });
  await (await fetch(`${withoutUrl.url}/a`)).text();
  const off = await startTracedObsApp(t, sdk, {}, (f) => {
    f.get('/b', async () => 'b');
  });
  await (await fetch(`${off.url}/b`)).text();
  const [first] = await withoutUrl.serverSpans();
  assert.equal(typeof first?.attributes[P.profileId], 'string');
  assert.equal(first?.attributes[P.profileUrl], undefined);
  const [second] = await off.serverSpans();
  assert.equal(second?.attributes[P.profileId], undefined);
  assert.equal(second?.attributes[P.pyroscopeProfileId], undefined);
  assert.equal((await section(off.url)).enabled, false);

  // an app whose requests are not traced: nothing to stamp, counted
  const untraced = await startObsApp({ config: { profiling: { enabled: true } } });
  t.after(() => untraced.close());
  const figures = await section(untraced.url);
  assert.equal(figures.stamped, 0);
  assert.equal(figures.without_span, 1);
});

test('profiling – Pyroscope handed to obs before it is started: the label fails quietly, the request goes on', async (t) => {
  const sdk = installOtelSdk(t);
  const app = await startTracedObsApp(t, sdk, { config: { profiling: { enabled: true } } }, (fastify) => {
    instrumentPyroscope(Pyroscope, fastify.obs);
    fastify.get('/p', async () => 'ok');
  });
  assert.equal(await (await fetch(`${app.url}/p`)).text(), 'ok');
  assert.equal(await (await fetch(`${app.url}/p`)).text(), 'ok');
  const figures = await section(app.url);
  assert.equal(figures.pyroscope, true);
  assert.equal(figures.labelled, 0);
  assert.equal(figures.label_failures, 3);
  assert.equal(app.logger.lines.filter((l) => l.level === 'warn').length, 1, 'warned once');
});

test('profiling – with the wall profiler started, the request runs labelled with its span id', async (t) => {
  // A closed loopback port, an hour between pushes: the profiler samples locally only.
  Pyroscope.init({ serverAddress: 'http://127.0.0.1:9', appName: 'obs-test', flushIntervalMs: 3_600_000 });
  Pyroscope.startWallProfiling();
  t.after(() => Pyroscope.stopWallProfiling());
  const sdk = installOtelSdk(t);
  let labels: Record<string, string | number> = {};
  const app = await startTracedObsApp(t, sdk, { config: { profiling: { enabled: true } } }, (fastify) => {
    instrumentPyroscope(Pyroscope, fastify.obs);
    fastify.get('/labelled', (_request, reply) => {
      labels = Pyroscope.getLabels();
      reply.send('ok');
    });
  });
  assert.equal(await (await fetch(`${app.url}/labelled`)).text(), 'ok');
  const [span] = await app.serverSpans();
  assert.deepEqual(labels, { span_id: span?.spanContext().spanId });
  assert.deepEqual(Pyroscope.getLabels(), {}, 'the label is taken off after the request');
  // the snapshot's own request is counted once its labelled chain has returned, after it was read
  assert.equal((await section(app.url)).labelled, 1);
});

test('profiling – the deep link quotes what it embeds', () => {
  assert.equal(
    profileUrl('http://p:4040', 'a"b', '00f067aa0ba902b7'),
    `http://p:4040/explore?query=${encodeURIComponent(`${PYROSCOPE_PROFILE_TYPE}{service_name="a\\"b",span_id="00f067aa0ba902b7"}`)}&from=now-1h&until=now`,
  );
});
