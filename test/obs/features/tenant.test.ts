import assert from 'node:assert/strict';
import { test } from 'node:test';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import Fastify, { type FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry } from 'prom-client';
import { OVERFLOW_VALUE } from '../../../src/obs/core/cardinality.ts';
import { loadObsConfig } from '../../../src/obs/core/config/config.ts';
import { contextFields } from '../../../src/obs/features/logging/logging.ts';
import {
  MAX_HOST_LENGTH,
  MAX_JWT_LENGTH,
  MAX_TENANT_ID_LENGTH,
  resolveTenant,
  TENANT_BAGGAGE_KEY,
  TENANT_METRICS,
  tenantFromHeader,
  tenantFromHost,
  tenantFromJwt,
  validTenantId,
} from '../../../src/obs/features/tenant.ts';
import { currentObsContext, type ObsConfigInput, obsPlugin } from '../../../src/obs/index.ts';
import { capturingLogger } from '../helpers.ts';

type TestContext = { after(fn: () => Promise<void>): void };

/** The label names a prom-client metric holds now (obs adds its context labels there). */
const labelNamesOf = (metric: object) => (metric as { labelNames?: readonly string[] }).labelNames;

const b64 = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
/** An unsigned-looking token: obs never checks the signature, so any third part will do. */
const jwt = (payload: unknown, signature = 'not-a-signature') =>
  `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(payload)}.${signature}`;
const bearer = (payload: unknown) => `Bearer ${jwt(payload)}`;

const valid = (tenant: string) => ({ kind: 'valid', tenant });
const ABSENT = { kind: 'absent' };
const kindOf = (read: { kind: string }) => read.kind;

test('tenant – validTenantId: 1 to 64 characters of [A-Za-z0-9._-]', () => {
  for (const id of ['a', 'Acme-01', 'eu.acme_corp', '42', '-', 'x'.repeat(MAX_TENANT_ID_LENGTH)]) {
    assert.equal(validTenantId(id), id);
  }
  for (const id of [
    '',
    'x'.repeat(MAX_TENANT_ID_LENGTH + 1),
    'a b',
    'a/b',
    'a,b',
    'é',
    'a\nb',
    'a"b',
    '{a}',
  ]) {
    assert.equal(validTenantId(id), undefined, JSON.stringify(id));
  }
});

test('tenant – tenantFromHeader: trimmed; empty is absent; anything else not an id is invalid', () => {
  assert.deepEqual(tenantFromHeader(undefined), ABSENT);
  assert.deepEqual(tenantFromHeader(''), ABSENT);
  assert.deepEqual(tenantFromHeader('  '), ABSENT);
  assert.deepEqual(tenantFromHeader(' acme '), valid('acme'));
  assert.equal(kindOf(tenantFromHeader('acme, beta')), 'invalid'); // repeated, joined by node
  assert.equal(kindOf(tenantFromHeader(['acme', 'beta'])), 'invalid');
  assert.equal(kindOf(tenantFromHeader('x'.repeat(65))), 'invalid');
  assert.equal(kindOf(tenantFromHeader('x'.repeat(10_000))), 'invalid');
});

test('tenant – tenantFromJwt: the claim of a bearer token, string or number, signature not checked', () => {
  assert.deepEqual(tenantFromJwt(bearer({ tenant_id: 'acme', sub: 'u1' }), 'tenant_id'), valid('acme'));
  assert.deepEqual(tenantFromJwt(bearer({ tenant_id: 42 }), 'tenant_id'), valid('42'));
  assert.deepEqual(tenantFromJwt(bearer({ org: 'beta' }), 'org'), valid('beta'));
  assert.deepEqual(tenantFromJwt(`bearer   ${jwt({ tenant_id: 'acme' })}  `, 'tenant_id'), valid('acme'));
  assert.deepEqual(tenantFromJwt(`BEARER ${jwt({ tenant_id: 'acme' })}`, 'tenant_id'), valid('acme'));
  // An empty or forged signature is accepted: the tenant is an attribution label, not an authorization.
  assert.deepEqual(tenantFromJwt(`Bearer ${jwt({ tenant_id: 'acme' }, '')}`, 'tenant_id'), valid('acme'));
  // base64url padding is tolerated
  const padded = `${b64({})}.${Buffer.from(JSON.stringify({ tenant_id: 'acme' })).toString('base64')}.x`;
  assert.deepEqual(tenantFromJwt(`Bearer ${padded}`, 'tenant_id'), valid('acme'));
});

test('tenant – tenantFromJwt: absent without a bearer JWT or without the claim', () => {
  assert.deepEqual(tenantFromJwt(undefined, 'tenant_id'), ABSENT);
  assert.deepEqual(tenantFromJwt('', 'tenant_id'), ABSENT);
  assert.deepEqual(tenantFromJwt(`Basic ${b64('user:pass')}`, 'tenant_id'), ABSENT);
  assert.deepEqual(tenantFromJwt(`Basic ${'a'.repeat(100_000)}`, 'tenant_id'), ABSENT);
  assert.deepEqual(tenantFromJwt('Bearer', 'tenant_id'), ABSENT);
  assert.deepEqual(tenantFromJwt('Bearer opaque-token-123', 'tenant_id'), ABSENT);
  assert.deepEqual(tenantFromJwt(`Bearer ${b64({})}.${b64({ tenant_id: 'a' })}`, 'tenant_id'), ABSENT);
  assert.deepEqual(tenantFromJwt(`Bearer ${jwt({ tenant_id: 'a' })}.extra`, 'tenant_id'), ABSENT);
  assert.deepEqual(tenantFromJwt(bearer({ sub: 'u1' }), 'tenant_id'), ABSENT);
  // an inherited property is no claim
  assert.deepEqual(tenantFromJwt(bearer({}), 'constructor'), ABSENT);
});

test('tenant – tenantFromJwt: invalid payloads, claims and lengths', () => {
  const invalid = (authorization: string, claim = 'tenant_id') =>
    assert.equal(kindOf(tenantFromJwt(authorization, claim)), 'invalid', authorization.slice(0, 80));
  invalid(`Bearer ${b64({})}.***.sig`);
  invalid(`Bearer ${b64({})}..sig`);
  invalid(`Bearer ${b64({})}.${b64('not json')}.sig`);
  invalid(`Bearer ${b64({})}.${b64('[1,2]')}.sig`);
  invalid(`Bearer ${b64({})}.${b64('"acme"')}.sig`);
  invalid(`Bearer ${b64({})}.${b64('null')}.sig`);
  invalid(bearer({ tenant_id: null }));
  invalid(bearer({ tenant_id: true }));
  invalid(bearer({ tenant_id: { id: 'acme' } }));
  invalid(bearer({ tenant_id: ['acme'] }));
  invalid(bearer({ tenant_id: 'acme corp' }));
  invalid(bearer({ tenant_id: '' }));
  invalid(bearer({ tenant_id: 1e21 })); // "1e+21"
  invalid(bearer({ tenant_id: 'x'.repeat(65) }));
  // The length cap applies before anything is decoded.
  const head = `${b64({})}.${b64({ tenant_id: 'acme' })}.`;
  const atCap = head + 's'.repeat(MAX_JWT_LENGTH - head.length);
  assert.equal(atCap.length, MAX_JWT_LENGTH);
  assert.deepEqual(tenantFromJwt(`Bearer ${atCap}`, 'tenant_id'), valid('acme'));
  invalid(`Bearer ${atCap}s`);
  invalid(`Bearer ${'a'.repeat(1_000_000)}`);
});

test('tenant – tenantFromJwt never throws, whatever it is given', () => {
  const samples = [
    'Bearer ...',
    'Bearer a.b.c',
    'Bearer .\u0000.',
    'Bearer a.%%%.c',
    `Bearer a.${b64('{"a":')}.c`,
  ];
  for (let i = 0; i < 200; i++) {
    // a deterministic spread of byte strings as payloads
    const bytes = Buffer.from(Array.from({ length: (i % 40) + 1 }, (_, j) => (i * 31 + j * 17) % 256));
    samples.push(`Bearer x.${bytes.toString('base64url')}.y`);
  }
  for (const sample of samples) assert.doesNotThrow(() => tenantFromJwt(sample, 'tenant_id'), sample);
});

test('tenant – tenantFromHost: the label at index, two labels at least to its right', () => {
  assert.deepEqual(tenantFromHost('acme.example.com', 0), valid('acme'));
  assert.deepEqual(tenantFromHost('acme.example.com:8443', 0), valid('acme'));
  assert.deepEqual(tenantFromHost('ACME.Example.COM', 0), valid('acme'));
  assert.deepEqual(tenantFromHost('acme.example.com.', 0), valid('acme'));
  assert.deepEqual(tenantFromHost('acme.eu.example.co.uk', 0), valid('acme'));
  assert.deepEqual(tenantFromHost('api.acme.example.com', 1), valid('acme'));
  // too few labels: the apex and single-label hosts name no tenant
  assert.deepEqual(tenantFromHost('example.com', 0), ABSENT);
  assert.deepEqual(tenantFromHost('acme.localhost', 0), ABSENT);
  assert.deepEqual(tenantFromHost('localhost:3000', 0), ABSENT);
  assert.deepEqual(tenantFromHost('acme.example.com', 1), ABSENT);
  // IP addresses
  assert.deepEqual(tenantFromHost('127.0.0.1', 0), ABSENT);
  assert.deepEqual(tenantFromHost('10.1.2.3:8080', 0), ABSENT);
  assert.deepEqual(tenantFromHost('[::1]:3000', 0), ABSENT);
  assert.deepEqual(tenantFromHost('[2001:db8::1]', 0), ABSENT);
  assert.deepEqual(tenantFromHost('2001:db8::1', 0), ABSENT);
  assert.deepEqual(tenantFromHost(undefined, 0), ABSENT);
  assert.deepEqual(tenantFromHost('', 0), ABSENT);
  // a label that is no tenant id, or a host past the cap
  assert.equal(kindOf(tenantFromHost('ac%me.example.com', 0)), 'invalid');
  assert.equal(kindOf(tenantFromHost('.example.com', 0)), 'invalid');
  assert.equal(kindOf(tenantFromHost(`${'a'.repeat(MAX_HOST_LENGTH)}.example.com`, 0)), 'invalid');
});

function tenantConfig(over: ObsConfigInput['tenant'] = {}) {
  return loadObsConfig({ env: {}, options: { tenant: { enabled: true, ...over } } }).config.tenant;
}

test('tenant – resolveTenant: header, then JWT, then subdomain, each only when on', () => {
  const all = tenantConfig({ jwt: { enabled: true }, subdomain: { enabled: true } });
  const headers = {
    'obs-tenant-id': 'from-header',
    authorization: bearer({ tenant_id: 'from-jwt' }),
    host: 'from-host.example.com',
  };
  assert.deepEqual(resolveTenant({ headers }, all), { tenant: 'from-header', source: 'header', invalid: [] });
  const { 'obs-tenant-id': _, ...noHeader } = headers;
  assert.deepEqual(resolveTenant({ headers: noHeader }, all), {
    tenant: 'from-jwt',
    source: 'jwt',
    invalid: [],
  });
  const { authorization: __, ...hostOnly } = noHeader;
  assert.deepEqual(resolveTenant({ headers: hostOnly }, all), {
    tenant: 'from-host',
    source: 'subdomain',
    invalid: [],
  });
  // request.host wins over the raw header (it is the forwarded host behind a trusted proxy)
  assert.equal(resolveTenant({ headers: hostOnly, host: 'other.example.com' }, all).tenant, 'other');
  // an invalid source is noted and the next one tried
  assert.deepEqual(resolveTenant({ headers: { ...headers, 'obs-tenant-id': 'bad id' } }, all), {
    tenant: 'from-jwt',
    source: 'jwt',
    invalid: ['header'],
  });
  assert.deepEqual(
    resolveTenant(
      {
        headers: {
          'obs-tenant-id': 'bad id',
          authorization: bearer({ tenant_id: [] }),
          host: 'b%d.example.com',
        },
      },
      all,
    ),
    { invalid: ['header', 'jwt', 'subdomain'] },
  );
  // sources turned off are not read
  const headerOnly = tenantConfig();
  assert.deepEqual(resolveTenant({ headers: noHeader }, headerOnly), { invalid: [] });
  const jwtOnly = tenantConfig({ header: { enabled: false }, jwt: { enabled: true, claim: 'org' } });
  assert.deepEqual(
    resolveTenant({ headers: { ...headers, authorization: bearer({ org: 'o1' }) } }, jwtOnly),
    { tenant: 'o1', source: 'jwt', invalid: [] },
  );
  const custom = tenantConfig({ header: { name: 'X-Tenant' } });
  assert.equal(resolveTenant({ headers: { 'x-tenant': 't9', 'obs-tenant-id': 'no' } }, custom).tenant, 't9');
  const second = tenantConfig({ header: { enabled: false }, subdomain: { enabled: true, index: 1 } });
  assert.equal(resolveTenant({ headers: { host: 'api.acme.example.com:80' } }, second).tenant, 'acme');
});

/** A plain fastify app (no obs) answering the headers it was sent. */
async function downstream(t: TestContext): Promise<string> {
  const app = Fastify();
  app.get('/echo', async (request) => ({ headers: request.headers }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/echo`;
}

interface Seen {
  tenant: string | null;
  fields: Record<string, unknown>;
  outbound: Record<string, string>;
  baggage: string | null;
}

async function tenantApp(
  t: TestContext,
  config: ObsConfigInput,
  setup: (app: FastifyInstance) => void = () => {},
  registry = new Registry(),
) {
  const target = await downstream(t);
  const app = Fastify();
  await app.register(obsPlugin, { env: {}, logger: capturingLogger(), registry, config });
  app.get('/seen', async (): Promise<Seen> => {
    const { headers } = (await (await fetch(target)).json()) as { headers: Record<string, string> };
    return {
      tenant: currentObsContext()?.tenant ?? null,
      fields: contextFields(),
      outbound: headers,
      baggage: propagation.getBaggage(context.active())?.getEntry(TENANT_BAGGAGE_KEY)?.value ?? null,
    };
  });
  setup(app);
  await app.ready();
  t.after(() => app.close());
  const seen = async (headers: Record<string, string> = {}): Promise<Seen> => {
    const response = await app.inject({ url: '/seen', headers });
    assert.equal(response.statusCode, 200, response.body);
    return response.json<Seen>();
  };
  return { app, registry, seen };
}

test('tenant – the context, the log fields and the outbound header carry the tenant of each source', async (t) => {
  const { seen } = await tenantApp(t, {
    tenant: { enabled: true, jwt: { enabled: true }, subdomain: { enabled: true } },
  });
  const fromHeader = await seen({ 'obs-tenant-id': 'acme' });
  assert.deepEqual(
    [fromHeader.tenant, fromHeader.fields.tenant, fromHeader.outbound['obs-tenant-id']],
    ['acme', 'acme', 'acme'],
  );
  // whatever the source, the tenant goes on in the header
  const fromJwt = await seen({ authorization: bearer({ tenant_id: 'beta' }) });
  assert.deepEqual([fromJwt.tenant, fromJwt.outbound['obs-tenant-id']], ['beta', 'beta']);
  const fromHost = await seen({ host: 'gamma.shop.example:8080' });
  assert.deepEqual([fromHost.tenant, fromHost.outbound['obs-tenant-id']], ['gamma', 'gamma']);
  // no tenant: nothing in the context, the log fields or the outbound call
  const none = await seen({ 'obs-tenant-id': 'bad tenant!' });
  assert.equal(none.tenant, null);
  assert.equal(none.fields.tenant, undefined);
  assert.equal(none.outbound['obs-tenant-id'], undefined);
});

test('tenant – header.name is read in and sent on, also for a tenant from the JWT', async (t) => {
  const { seen } = await tenantApp(t, {
    tenant: { enabled: true, header: { name: 'X-Tenant' }, jwt: { enabled: true, claim: 'org' } },
  });
  const own = await seen({ 'x-tenant': 'acme', 'obs-tenant-id': 'other' });
  assert.equal(own.tenant, 'acme');
  assert.equal(own.outbound['x-tenant'], 'acme');
  assert.equal(own.outbound['obs-tenant-id'], undefined);
  assert.equal((await seen({ authorization: bearer({ org: 'o7' }) })).outbound['x-tenant'], 'o7');
});

test('tenant – a source holding no tenant id counts in obs_tenant_invalid_total{source}', async (t) => {
  const { registry, seen } = await tenantApp(t, {
    tenant: { enabled: true, jwt: { enabled: true }, subdomain: { enabled: true } },
  });
  assert.equal(
    (await seen({ 'obs-tenant-id': 'a b', authorization: bearer({ tenant_id: 'ok' }) })).tenant,
    'ok',
  );
  await seen({ authorization: `Bearer ${b64({})}.***.x` });
  await seen({ host: 'b$d.example.com' });
  await seen({ 'obs-tenant-id': 'fine' });
  const values = (await registry.getSingleMetric(TENANT_METRICS.invalid)?.get())?.values ?? [];
  assert.deepEqual(Object.fromEntries(values.map((v) => [v.labels.source, v.value])), {
    header: 1,
    jwt: 1,
    subdomain: 1,
  });
});

test('tenant – the tenant is in OpenTelemetry baggage (real AsyncLocalStorage context manager)', async (t) => {
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  t.after(() => {
    context.disable();
    manager.disable();
  });
  const { seen } = await tenantApp(t, { tenant: { enabled: true } });
  assert.equal((await seen({ 'obs-tenant-id': 'acme' })).baggage, 'acme');
  assert.equal((await seen()).baggage, null);
});

test('tenant – an app meter in tag-meters gets a tenant label, capped at max-tag-cardinality', async (t) => {
  const registry = new Registry();
  const orders = new Counter({ name: 'orders_total', help: 'orders', registers: [registry] });
  const other = new Counter({
    name: 'other_total',
    help: 'other',
    labelNames: ['kind'],
    registers: [registry],
  });
  let latency: Histogram | undefined;
  const { app } = await tenantApp(
    t,
    {
      tenant: { enabled: true, 'max-tag-cardinality': 2, 'tag-meters': ['orders_total', 'latency_seconds'] },
    },
    (app) => {
      // registered after obs, and its child made outside any request
      latency = new Histogram({
        name: 'latency_seconds',
        help: 'latency',
        labelNames: ['route'],
        buckets: [1],
        registers: [registry],
      });
      const child = latency.labels('/order');
      app.get('/order', async () => {
        orders.inc();
        other.inc({ kind: 'x' });
        child.observe(0.5);
        return {};
      });
    },
    registry,
  );
  for (const tenant of ['a', 'b', 'a', 'c', 'd', undefined]) {
    const headers: Record<string, string> = tenant === undefined ? {} : { 'obs-tenant-id': tenant };
    assert.equal((await app.inject({ url: '/order', headers })).statusCode, 200);
  }
  const byTenant = async (metric: Counter | Histogram, name = '') =>
    Object.fromEntries(
      (await metric.get()).values
        .filter((v) => name === '' || (v as { metricName?: string }).metricName === name)
        .map((v) => [String(v.labels.tenant), v.value]),
    );
  assert.deepEqual(await byTenant(orders), { a: 2, b: 1, [OVERFLOW_VALUE]: 2, none: 1 });
  assert.ok(latency !== undefined);
  assert.deepEqual(await byTenant(latency, 'latency_seconds_count'), {
    a: 2,
    b: 1,
    [OVERFLOW_VALUE]: 2,
    none: 1,
  });
  const routes = new Set((await latency.get()).values.map((v) => v.labels.route));
  assert.deepEqual([...routes], ['/order']);
  // a meter not listed keeps its label names
  assert.deepEqual(labelNamesOf(other), ['kind']);
  assert.deepEqual(
    (await other.get()).values.map((v) => [v.labels, v.value]),
    [[{ kind: 'x' }, 6]],
  );
});

test('tenant – /actuator/obs shows tenants by source, invalid counts and the distinct labels in use', async (t) => {
  const registry = new Registry();
  const orders = new Counter({ name: 'orders_total', help: 'orders', registers: [registry] });
  const { app, seen } = await tenantApp(
    t,
    {
      tenant: {
        enabled: true,
        jwt: { enabled: true },
        'max-tag-cardinality': 1,
        'tag-meters': ['orders_total', 'missing_total'],
      },
    },
    (app) => app.get('/order', async () => orders.inc()),
    registry,
  );
  await seen({ 'obs-tenant-id': 'acme' });
  await seen({ authorization: bearer({ tenant_id: 'beta' }) });
  await seen({ 'obs-tenant-id': '???' });
  await app.inject({ url: '/order', headers: { 'obs-tenant-id': 'acme' } });
  await app.inject({ url: '/order', headers: { 'obs-tenant-id': 'beta' } });
  const section = (await app.inject({ url: '/actuator/obs' })).json<{
    sections: Record<string, Record<string, unknown>>;
  }>().sections.tenant;
  assert.equal(section?.enabled, true);
  assert.deepEqual(section?.sources, ['header', 'jwt']);
  assert.equal(section?.jwt_signature_verified, false);
  // the snapshot's own request has no tenant
  assert.deepEqual(section?.requests, { header: 3, jwt: 1, subdomain: 0, none: 2 });
  assert.deepEqual(section?.invalid, { header: 1, jwt: 0, subdomain: 0 });
  assert.deepEqual(section?.tag_meters, {
    listed: ['orders_total', 'missing_total'],
    tagged: ['orders_total'],
    max_tag_cardinality: 1,
    distinct_values: { orders_total: 2 }, // acme and OVERFLOW
    overflowed: 1,
  });
});

test('tenant – disabled (the default): no tenant, no header sent, no meter, no label', async (t) => {
  const registry = new Registry();
  const orders = new Counter({ name: 'orders_total', help: 'orders', registers: [registry] });
  const { app, seen } = await tenantApp(
    t,
    { tenant: { jwt: { enabled: true }, subdomain: { enabled: true }, 'tag-meters': ['orders_total'] } },
    () => {},
    registry,
  );
  const body = await seen({
    'obs-tenant-id': 'acme',
    authorization: bearer({ tenant_id: 'beta' }),
    host: 'gamma.example.com',
  });
  assert.equal(body.tenant, null);
  assert.equal(body.fields.tenant, undefined);
  assert.equal(body.outbound['obs-tenant-id'], undefined);
  assert.equal(registry.getSingleMetric(TENANT_METRICS.invalid), undefined);
  assert.deepEqual(labelNamesOf(orders), []);
  const section = (await app.inject({ url: '/actuator/obs' })).json<{
    sections: Record<string, Record<string, unknown>>;
  }>().sections.tenant;
  assert.equal(section?.enabled, false);
  assert.deepEqual(section?.requests, { header: 0, jwt: 0, subdomain: 0, none: 0 });
});
