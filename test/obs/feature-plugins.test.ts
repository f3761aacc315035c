import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { CORE_PLUGIN, FEATURE_PLUGINS } from '../../src/obs/feature-plugins.ts';
import { currentRequestContext } from '../../src/obs/features/request-context/request-context.ts';
import { obsCore, obsPlugin } from '../../src/obs/plugin.ts';
import { sharedPlugin } from '../../src/obs/plugin-meta.ts';
import { capturingLogger } from './helpers.ts';

interface PluginMeta {
  readonly name: string;
  readonly dependencies?: readonly string[];
}
const metaOf = (plugin: object): PluginMeta =>
  (plugin as { [key: symbol]: PluginMeta })[Symbol.for('plugin-meta')] as PluginMeta;
const featureNamed = (name: string) => {
  const found = FEATURE_PLUGINS.find((plugin) => metaOf(plugin).name === `echo-chaos-obs-${name}`);
  assert.ok(found !== undefined, `a feature plugin ${name}`);
  return found;
};
const options = () => ({ env: {}, logger: capturingLogger(), registry: new Registry() });

test('feature plugins – each names the core and what it needs, and comes after them', () => {
  assert.ok(FEATURE_PLUGINS.length >= 19, `${FEATURE_PLUGINS.length} features`);
  const before = new Set([CORE_PLUGIN]);
  for (const plugin of FEATURE_PLUGINS) {
    const meta = metaOf(plugin);
    assert.ok(meta.dependencies?.includes(CORE_PLUGIN), `${meta.name} needs the core`);
    for (const needed of meta.dependencies ?? []) {
      assert.ok(before.has(needed), `${meta.name} is registered after ${needed}`);
    }
    assert.ok(!before.has(meta.name), `${meta.name} once`);
    before.add(meta.name);
  }
  assert.ok(
    metaOf(featureNamed('timeout-budget')).dependencies?.includes('echo-chaos-obs-request-context'),
    'a contributor to the request context needs it',
  );
});

test('feature plugins – one registered without the core, or without what it needs, stops startup naming it', async () => {
  const bare = Fastify();
  await assert.rejects(
    async () => {
      await bare.register(featureNamed('timeout-budget'));
      await bare.ready();
    },
    (error: Error) => error.message.includes(CORE_PLUGIN) && error.message.includes('timeout-budget'),
  );
  const withCore = Fastify();
  await withCore.register(obsCore, options());
  await assert.rejects(
    async () => {
      await withCore.register(featureNamed('timeout-budget'));
      await withCore.ready();
    },
    (error: Error) => error.message.includes('echo-chaos-obs-request-context'),
  );
  await withCore.close();
});

test('feature plugins – the core with one feature works alone: the request context without the rest', async (t) => {
  const app = Fastify();
  t.after(() => app.close());
  await app.register(obsCore, options());
  await app.register(featureNamed('request-context'));
  app.get('/id', async () => currentRequestContext()?.requestId ?? 'none');
  const response = await app.inject({ url: '/id', headers: { 'x-request-id': 'req-12345' } });
  assert.equal(response.body, 'req-12345');
  const sections = app.obs.snapshot().sections;
  assert.ok(sections['context'] !== undefined, 'the request context has its section');
  assert.equal(sections['slo'], undefined, 'no feature registered that was not asked for');
});

test('feature plugins – obsPlugin registers the core and every feature', async (t) => {
  const app = Fastify();
  t.after(() => app.close());
  await app.register(obsPlugin, options());
  await app.ready();
  for (const plugin of [obsCore, ...FEATURE_PLUGINS]) {
    const { name } = metaOf(plugin);
    assert.ok(app.hasPlugin(name), `${name} is registered`);
  }
  assert.ok(app.obs.snapshot().sections['slo'] !== undefined, 'the SLO feature has its section');
});

test('feature plugins – sharedPlugin: fastify shares the scope, checks the fastify range and names the plugin', async (t) => {
  const app = Fastify();
  t.after(() => app.close());
  // Shared: a decoration and a hook the plugin adds reach the app's own routes.
  await app.register(
    sharedPlugin(
      async (instance) => {
        instance.decorate('sharedMark', 'from the plugin');
        instance.addHook('onRequest', async (_request, reply) => {
          reply.header('x-shared', 'yes');
        });
      },
      { name: 'test-shared', fastify: '5.x' },
    ),
  );
  app.get('/', async () => (app as unknown as { sharedMark: string }).sharedMark);
  const reply = await app.inject({ method: 'GET', url: '/' });
  assert.equal(reply.body, 'from the plugin');
  assert.equal(reply.headers['x-shared'], 'yes');
  // The range: fastify refuses a plugin made for another major version, naming it.
  const other = Fastify();
  t.after(() => other.close());
  await assert.rejects(
    async () => {
      await other.register(sharedPlugin(async () => {}, { name: 'test-for-fastify-4', fastify: '4.x' }));
    },
    (err: Error & { code?: string }) =>
      err.code === 'FST_ERR_PLUGIN_VERSION_MISMATCH' && err.message.includes('test-for-fastify-4'),
  );
  // The name: what a dependency names.
  const third = Fastify();
  t.after(() => third.close());
  await third.register(sharedPlugin(async () => {}, { name: 'test-first', fastify: '5.x' }));
  await third.register(
    sharedPlugin(async () => {}, { name: 'test-second', fastify: '5.x', dependencies: ['test-first'] }),
  );
  await assert.rejects(
    async () => {
      await third.register(
        sharedPlugin(async () => {}, { name: 'test-third', fastify: '5.x', dependencies: ['test-absent'] }),
      );
    },
    (err: Error & { code?: string }) =>
      err.code === 'FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED' && /test-absent/.test(err.message),
  );
});
