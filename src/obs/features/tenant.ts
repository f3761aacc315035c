/**
 * Multi-tenant context (opt-in, `obs.tenant.enabled`): its part of the request context
 * (`context-hook.ts`) reads the tenant id from the sources turned on, in the order header, JWT
 * claim, subdomain ({@link resolveTenant}), and puts it in the request context (logs carry it as
 * `tenant`; outbound calls carry it in `obs.tenant.header.name`, whatever the source), in the
 * baggage (`obs.tenant.id`) and on the active span (`obs.tenant`). A source that holds a value
 * which is not a tenant id counts in `obs_tenant_invalid_total{source}` and the next source is
 * tried. The meters named in `tag-meters` get a `tenant` label, capped at `max-tag-cardinality`
 * distinct values per meter (`context-meter-labels.ts`).
 *
 * **The JWT signature is not verified.** Anyone can send a token with any claim: the tenant read
 * from it is an attribution label for telemetry (logs, metrics, traces, the header passed on), never
 * an authorization decision. Authorization stays with the application, on a verified token.
 */
import { Counter } from 'prom-client';
import { CARDINALITY_OVERFLOW_METRIC } from '../core/cardinality.ts';
import type { ObsConfig } from '../core/config/config-schema.ts';
import type { ObsCore } from '../core/obs.ts';
import { contextKit } from './request-context/context-hook.ts';
import { addContextLabel } from './request-context/context-meter-labels.ts';
import { currentRequestContext } from './request-context/request-context.ts';

/** Names of the meters of the tenant context. */
export const TENANT_METRICS = { invalid: 'obs_tenant_invalid_total' } as const;

/** The baggage entry that carries the tenant id. */
export const TENANT_BAGGAGE_KEY = 'obs.tenant.id';
/** The span attribute that carries the tenant id. */
export const TENANT_SPAN_ATTRIBUTE = 'obs.tenant';
/** The label the meters of `obs.tenant.tag-meters` get. */
export const TENANT_LABEL = 'tenant';

/** The longest tenant id kept. */
export const MAX_TENANT_ID_LENGTH = 64;
/** The longest bearer token decoded; a longer one is invalid. */
export const MAX_JWT_LENGTH = 8192;
/** The longest host name read (DNS allows 253 characters, plus a port). */
export const MAX_HOST_LENGTH = 260;

const TENANT_ID = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const BEARER_SCHEME = /^bearer[ \t]/i;
const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** Where a tenant id came from, in the order the sources are tried. */
export type TenantSource = 'header' | 'jwt' | 'subdomain';
export const TENANT_SOURCES: readonly TenantSource[] = ['header', 'jwt', 'subdomain'];

/** What one source held: nothing, a tenant id, or a value that is not one. */
export type TenantRead =
  | { readonly kind: 'absent' }
  | { readonly kind: 'valid'; readonly tenant: string }
  | { readonly kind: 'invalid'; readonly reason: string };

const ABSENT: TenantRead = { kind: 'absent' };
const invalid = (reason: string): TenantRead => ({ kind: 'invalid', reason });

/** `value` when it is a tenant id: 1 to {@link MAX_TENANT_ID_LENGTH} characters of `[A-Za-z0-9._-]`. */
export function validTenantId(value: string): string | undefined {
  return TENANT_ID.test(value) ? value : undefined;
}

function checked(value: string, what: string): TenantRead {
  return validTenantId(value) === undefined
    ? invalid(`${what} is not a tenant id`)
    : { kind: 'valid', tenant: value };
}

/** The tenant id of the tenant header's value (trimmed); empty or absent is absent. */
export function tenantFromHeader(value: string | readonly string[] | undefined): TenantRead {
  if (value === undefined) return ABSENT;
  if (typeof value !== 'string') return invalid('repeated header');
  if (value.length > MAX_TENANT_ID_LENGTH * 2) return invalid('header too long');
  const text = value.trim();
  return text === '' ? ABSENT : checked(text, 'the header');
}

/**
 * The tenant id in claim `claim` of the bearer token of an `Authorization` header, **without
 * verifying its signature** (see the module's note). Absent: no header, another scheme, a token that
 * is not a JWT (not three dot-separated parts: an opaque token), or no such claim. Invalid: a token
 * longer than {@link MAX_JWT_LENGTH}, a payload that is not base64url JSON of an object, or a claim
 * that is neither a string nor a finite number naming a tenant id. Never throws.
 */
export function tenantFromJwt(
  authorization: string | readonly string[] | undefined,
  claim: string,
): TenantRead {
  if (typeof authorization !== 'string' || !BEARER_SCHEME.test(authorization)) return ABSENT;
  if (authorization.length > MAX_JWT_LENGTH + 16) return invalid('token too long');
  const token = BEARER.exec(authorization)?.[1];
  if (token === undefined) return ABSENT;
  if (token.length > MAX_JWT_LENGTH) return invalid('token too long');
  const parts = token.split('.');
  if (parts.length !== 3) return ABSENT;
  const payload = parts[1] ?? '';
  if (!BASE64URL.test(payload)) return invalid('payload is not base64url');
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return invalid('payload is not JSON');
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) {
    return invalid('payload is not an object');
  }
  if (!Object.hasOwn(claims, claim)) return ABSENT;
  const value = (claims as Record<string, unknown>)[claim];
  if (typeof value === 'string') return checked(value, 'the claim');
  if (typeof value === 'number' && Number.isFinite(value)) return checked(String(value), 'the claim');
  return invalid('the claim is neither a string nor a number');
}

/**
 * The tenant id in label `index` (0-based from the left) of a host name, port stripped, lower-cased.
 * Absent: no host, an IP address (v4 or v6), or a host with fewer than `index + 3` labels: at least
 * two labels must stay to the right of the tenant's (the domain and its suffix), so
 * `acme.example.com` with index 0 names `acme` while `example.com` and `acme.localhost` name none.
 * Invalid: a host longer than {@link MAX_HOST_LENGTH}, or a label that is not a tenant id.
 */
export function tenantFromHost(host: string | undefined, index: number): TenantRead {
  if (host === undefined || host === '') return ABSENT;
  if (host.length > MAX_HOST_LENGTH) return invalid('host too long');
  if (host.startsWith('[')) return ABSENT; // an IPv6 literal
  const colons = host.split(':').length - 1;
  if (colons > 1) return ABSENT; // an IPv6 address without brackets
  let name = (colons === 1 ? host.slice(0, host.indexOf(':')) : host).toLowerCase();
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (IPV4.test(name)) return ABSENT;
  const labels = name.split('.');
  if (labels.length < index + 3) return ABSENT;
  return checked(labels[index] ?? '', 'the host label');
}

/** What a request offers the tenant sources. */
export interface TenantInputs {
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The request's host (`request.host`: the Host header, or the forwarded one behind a trusted proxy). */
  readonly host?: string;
}

/** What {@link resolveTenant} found. */
export interface ResolvedTenant {
  readonly tenant?: string;
  readonly source?: TenantSource;
  /** The sources tried that held a value which is not a tenant id, in order. */
  readonly invalid: readonly TenantSource[];
}

/**
 * The tenant of a request: the first source turned on that holds a tenant id, tried in the order
 * header, JWT claim, subdomain; a source holding something else is noted in `invalid` and passed
 * over. Never throws.
 */
export function resolveTenant(inputs: TenantInputs, config: ObsConfig['tenant']): ResolvedTenant {
  const invalidSources: TenantSource[] = [];
  const read = (source: TenantSource): TenantRead => {
    switch (source) {
      case 'header':
        return config.header.enabled
          ? tenantFromHeader(inputs.headers[config.header.name.toLowerCase()])
          : ABSENT;
      case 'jwt':
        return config.jwt.enabled ? tenantFromJwt(inputs.headers.authorization, config.jwt.claim) : ABSENT;
      case 'subdomain': {
        if (!config.subdomain.enabled) return ABSENT;
        const host = inputs.host ?? inputs.headers.host;
        return tenantFromHost(typeof host === 'string' ? host : undefined, config.subdomain.index);
      }
    }
  };
  for (const source of TENANT_SOURCES) {
    let result: TenantRead;
    try {
      result = read(source);
    } catch {
      result = invalid('unreadable');
    }
    if (result.kind === 'valid') return { tenant: result.tenant, source, invalid: invalidSources };
    if (result.kind === 'invalid') invalidSources.push(source);
  }
  return { invalid: invalidSources };
}

/**
 * Adds the tenant context to an obs instance: its context contributor, outbound header, meter
 * labels and snapshot section (all but the section only when `obs.tenant.enabled`).
 */
export function registerTenant(obs: ObsCore): void {
  const config = obs.config.tenant;
  const seen = Object.fromEntries(TENANT_SOURCES.map((s) => [s, 0])) as Record<TenantSource, number>;
  const invalidCounts = Object.fromEntries(TENANT_SOURCES.map((s) => [s, 0])) as Record<TenantSource, number>;
  let none = 0;
  let label: ReturnType<typeof addContextLabel> | undefined;
  obs.addSnapshotSection('tenant', () => ({
    enabled: config.enabled,
    config: obs.resolved.effective.tenant ?? null,
    header: config.header.name,
    sources: TENANT_SOURCES.filter((s) => config[s].enabled),
    jwt_signature_verified: false,
    baggage: TENANT_BAGGAGE_KEY,
    metrics: [TENANT_METRICS.invalid],
    requests: { ...seen, none },
    invalid: { ...invalidCounts },
    tag_meters: {
      listed: [...config['tag-meters']],
      tagged: label?.tagged() ?? [],
      max_tag_cardinality: config['max-tag-cardinality'],
      distinct_values: label?.distinct() ?? {},
      overflowed: label?.overflowed() ?? 0,
    },
  }));
  if (!config.enabled) return;

  const invalidCounter = new Counter({
    name: TENANT_METRICS.invalid,
    help: 'Inbound requests whose tenant source held a value that is not a tenant id (the next source was tried), by source',
    labelNames: ['source'],
    registers: [obs.registry],
  });
  const kit = contextKit(obs);
  kit.propagation.tenantHeader = config.header.name;
  kit.addContributor('tenant', ({ request, store, baggage, attribute }) => {
    const resolved = resolveTenant({ headers: request.headers, host: request.host }, config);
    for (const source of resolved.invalid) {
      invalidCounts[source] += 1;
      invalidCounter.inc({ source });
    }
    if (resolved.tenant === undefined || resolved.source === undefined) {
      none += 1;
      return;
    }
    seen[resolved.source] += 1;
    store.tenant = resolved.tenant;
    baggage(TENANT_BAGGAGE_KEY, resolved.tenant);
    attribute(TENANT_SPAN_ATTRIBUTE, resolved.tenant);
  });
  label = addContextLabel(obs.registry, {
    label: TENANT_LABEL,
    meters: config['tag-meters'],
    current: () => currentRequestContext()?.tenant,
    maxValues: config['max-tag-cardinality'],
    onOverflow: (meter) => {
      const overflow = obs.registry.getSingleMetric(CARDINALITY_OVERFLOW_METRIC) as Counter | undefined;
      overflow?.inc({ meter, tag_key: TENANT_LABEL });
    },
    onSkipped: (meter, reason) =>
      obs.logger.warn({ obs: 'tenant', meter }, `obs cannot add a tenant label to ${meter}: ${reason}`),
  });
}
