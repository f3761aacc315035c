/**
 * The `obs.*` configuration tree: every key, its type, default, limits and meaning, in one place
 * (pino's habit: all defaults in one file), written as TypeBox schemas with the builders of
 * `config-fields.ts` (docs/adr/0045-one-settings-mechanism.md): a subtree is a `Type.Object`, a key a
 * schema with its `default` and `description`. The TypeScript types of the resolved tree
 * ({@link ObsConfig}) and of the code options ({@link ObsConfigInput}) are derived from it, the
 * loader validates against it, the environment variable names come from it and the reference in
 * `docs/obs/index.md` is generated from it, so none of them can drift.
 *
 * Names follow the seed (`obs.timeout-budget.default-budget`) and, where the seed is silent, the
 * public Spring starter it was written from. Durations are held in milliseconds.
 *
 * The keys of features that have no code yet (`planned` in `features.ts`) stay here to document what
 * will come; they are refused when set, and left out of the effective tree and the reference.
 */
import {
  bool,
  duration,
  group,
  HEADER_FORM,
  HEADER_NAME,
  header,
  headerMap,
  type Input,
  integer,
  list,
  objectList,
  oneOf,
  optionalDuration,
  optionalText,
  PATH,
  PATH_FORM,
  type Resolved,
  ratio,
  requiredText,
  stringMap,
  text,
} from './config-fields.ts';

/**
 * The per-request gate of a feature. An empty block matches every request; populated fields
 * combine with AND.
 */
function enabledWhen() {
  return group('Skips the feature for matching requests; empty matches every request.', {
    'header-not-equals': headerMap(
      'Header name to value: a request carrying that header with exactly that value skips the feature. A missing header does not skip.',
    ),
    'path-excludes': list(
      [],
      'Paths skipped: a request whose path equals one of these, or lies below it (`/internal` skips `/internal/x`, not `/internals`), skips the feature.',
      PATH,
      PATH_FORM,
    ),
  });
}

/** A Prometheus metric name, bounded. */
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]{0,199}$/;
const MATCHER = String.raw`[a-zA-Z_][a-zA-Z0-9_]*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\\n]|\\.)*"`;
/** A comma-separated list of PromQL label matchers (`a="x",b=~"y.*"`), at most 500 characters. */
export const LABEL_MATCHERS = new RegExp(`^(?=[^]{1,500}$)\\s*${MATCHER}(?:\\s*,\\s*${MATCHER})*\\s*$`);
const LABEL_MATCHERS_FORM =
  'PromQL label matchers separated by commas, each name="value", name!="value", name=~"regex" or name!~"regex", at most 500 characters';

/** The two enforcement modes. There is no OFF: a feature is taken out with its own `enabled=false`. */
export const ENFORCEMENT_MODES = ['ENFORCING', 'DRY_RUN'] as const;
/** Enforcement mode: ENFORCING applies every guardrail; DRY_RUN observes and counts, never enforces. */
export type EnforcementMode = (typeof ENFORCEMENT_MODES)[number];

/** The profiles of the shipped presets (`application-obs-<profile>.yml`). */
export const PRESET_PROFILES = ['dev', 'prod', 'test', 'canary'] as const;
/** One of {@link PRESET_PROFILES}. */
export type PresetProfile = (typeof PRESET_PROFILES)[number];

/** The whole `obs.*` tree. Keys are the kebab-case property names. */
export const OBS_SCHEMA = group('Observability library settings.', {
  cardinality: group('Cardinality firewall: a hard cap of distinct values per meter and label.', {
    enabled: bool(true, 'Guard every label of every meter.'),
    'max-tag-values-per-meter': integer(
      1000,
      1,
      1_000_000,
      'Distinct values kept per meter and label; past it ENFORCING rewrites the value, DRY_RUN counts it.',
    ),
    'overflow-value': text('OVERFLOW', 'The value a label takes past the cap in ENFORCING mode.'),
    'meter-prefixes-to-protect': list(
      [],
      'Only meters whose name starts with one of these; empty guards all.',
    ),
    'exempt-meter-prefixes': list([], 'Meters whose name starts with one of these are never guarded.'),
  }),
  'timeout-budget': group('Deadline propagation across inbound and outbound calls.', {
    enabled: bool(true, 'Establish a budget per inbound request and stamp it on outbound calls.'),
    'default-budget': duration(
      '2s',
      'Budget of a request that carries no deadline header; 0 establishes none (nothing stamped, no exhaustion).',
    ),
    'maximum-budget': duration('30s', 'Ceiling of an inbound budget; larger ones are clamped.'),
    'minimum-budget': duration(
      '100ms',
      'An outbound call with this much or less remaining counts as exhausted; also the floor of the implicit default.',
    ),
    'safety-margin': duration(
      '50ms',
      'Subtracted when a remaining-ms header or the default establishes a deadline; never from an absolute deadline.',
    ),
    'inbound-header': header('Obs-Timeout-Ms', 'Inbound header of remaining milliseconds.'),
    'outbound-header': optionalText(
      'Outbound header of remaining milliseconds; default: the inbound header.',
      HEADER_NAME,
      HEADER_FORM,
    ),
    'abort-on-exhaustion': bool(
      false,
      'Outbound HTTP calls throw instead of executing when exhausted (ENFORCING mode; DRY_RUN only counts them).',
    ),
    'apply-client-timeout': bool(
      false,
      'Abort an outbound call still running when the budget runs out (undici: bounds its header and body waits).',
    ),
    'enabled-when': enabledWhen(),
  }),
  context: group('Context propagation: request and trace context carried across async work and Kafka.', {
    enabled: bool(
      true,
      'Carry the request context (AsyncLocalStorage) into queued work and Kafka listeners.',
    ),
    'request-id-header': header('X-Request-ID', 'Header of the request id put on every log line.'),
  }),
  'trace-guard': group('Trace-context guard: counts requests with and without `traceparent` per route.', {
    enabled: bool(true, 'Count `obs_trace_received_total` and `obs_trace_missing_total` per route.'),
    'fail-on-missing': bool(false, 'Reject a request without trace context with 400 (ENFORCING only).'),
    'exclude-path-prefixes': list(
      ['/actuator', '/health', '/ready', '/metrics'],
      'Paths never checked (probes and scrapes).',
      PATH,
      PATH_FORM,
    ),
    'enabled-when': enabledWhen(),
  }),
  logging: group('Structured logs: JSON lines with request, trace and span ids.', {
    enabled: bool(true, 'Write JSON log lines carrying request id, trace id and span id.'),
    'pii-masking-enabled': bool(
      true,
      'Mask emails, bearer tokens, card numbers, SSNs and secret-named JSON fields in messages, headers and bodies.',
    ),
  }),
  'exception-handler': group('Stable exception fingerprints and RFC 7807 problem answers.', {
    enabled: bool(
      true,
      'Fingerprint server errors (log line, span, `obs_errors_unhandled_total`); the plugin option `problemErrorHandler` also answers them as RFC 7807 problems.',
    ),
    // fingerprint.ts
    'fingerprint-frames': integer(
      5,
      1,
      50,
      'Top stack frames (function and package-relative file, no line numbers) a fingerprint covers.',
    ),
    'enabled-when': enabledWhen(),
  }),
  'conditional-features': group('Conditional features: the `enabled-when` blocks of the features.', {
    enabled: bool(true, 'Apply every `enabled-when` block; false makes every feature run on every request.'),
  }),
  dependencies: group('Dependency health map: per-downstream RED metrics.', {
    enabled: bool(true, 'Record requests, errors and latency per downstream dependency.'),
    map: stringMap('host', 'Host (or host:port) to logical dependency name.'),
    'default-name': text('unknown', 'Dependency name of a host missing from the map.'),
    health: group('Dependency health indicator.', {
      enabled: bool(true, 'Report DEGRADED when a dependency error rate crosses the threshold.'),
      'error-rate-threshold': ratio(
        0.5,
        'Error ratio (transport errors and timeouts included) that degrades.',
      ),
      window: duration('1m', 'Sliding window the error rate is computed over.', 1000),
      'minimum-calls': integer(
        10,
        1,
        1_000_000,
        'Calls a dependency must have in the window before its error rate is judged.',
      ),
    }),
    'enabled-when': enabledWhen(),
  }),
  retry: group('Retry amplification: retry depth carried as `Obs-Retry-Depth` header and baggage.', {
    enabled: bool(true, 'Propagate the retry depth and flag amplification.'),
    'amplification-threshold': integer(
      3,
      1,
      1000,
      'Inbound retry depth at or above which amplification is flagged.',
    ),
    'header-name': header('Obs-Retry-Depth', 'Header carrying the retry depth.'),
  }),
  tenant: group('Multi-tenant context: tenant id from a header, a JWT claim or the subdomain.', {
    enabled: bool(false, 'Extract the tenant id and put it on logs, baggage and outbound calls.'),
    header: group('Tenant id from a header.', {
      enabled: bool(true, 'Read the tenant id from the header.'),
      name: header('Obs-Tenant-Id', 'Header carrying the tenant id.'),
    }),
    jwt: group('Tenant id from a claim of the bearer token (read, not verified).', {
      enabled: bool(false, 'Read the tenant id from the JWT claim.'),
      claim: text('tenant_id', 'Claim carrying the tenant id.'),
    }),
    subdomain: group('Tenant id from a label of the Host header.', {
      enabled: bool(false, 'Read the tenant id from the Host header.'),
      index: integer(0, 0, 126, 'Label of the host name, 0-based from the left.'),
    }),
    'max-tag-cardinality': integer(100, 1, 1_000_000, 'Distinct tenant values kept as a metric label.'),
    'tag-meters': list([], 'Meters that get a `tenant` label.'),
  }),
  priority: group('Request priority from the `Obs-Priority` header.', {
    enabled: bool(false, 'Read the request priority and propagate it.'),
    'header-name': header('Obs-Priority', 'Header carrying the priority.'),
    'default-priority': oneOf(
      ['critical', 'high', 'normal', 'low', 'background'],
      'normal',
      'Priority of a request without the header.',
    ),
    'tag-meters': list([], 'Meters that get a `priority` label.'),
  }),
  'container-memory': group('Container-aware memory metrics from cgroup v1 or v2.', {
    enabled: bool(true, 'Export `obs_container_memory_*` metrics (used, limit, headroom, OOM kills).'),
    'readiness-enabled': bool(false, 'Fail readiness while headroom is below the critical ratio.'),
    'critical-headroom-ratio': ratio(0.1, 'Headroom (free share of the limit) below which readiness fails.'),
    'cgroup-root': text('/sys/fs/cgroup', 'Where the cgroup file system is mounted.', PATH, PATH_FORM),
  }),
  kafka: group('Kafka propagation and time-based lag (kafkajs, when handed to obs).', {
    enabled: bool(true, 'Instrument the kafkajs client handed to obs.'),
    'propagation-enabled': bool(true, 'Stamp deadline and context headers on produced records.'),
    'consumer-time-lag-enabled': bool(true, 'Record how old each consumed record is.'),
    'skip-stale-records': bool(false, 'Skip consumed records older than skip-stale-max-age.'),
    'skip-stale-max-age': duration('5m', 'Oldest record processed when skipping is on.'),
  }),
  'fan-out': group('Request fan-out: outbound calls per inbound request, per endpoint.', {
    enabled: bool(true, 'Record `obs_request_fan_out` and `obs_request_dependencies` per endpoint.'),
    'warn-threshold': integer(
      20,
      1,
      100_000,
      'Outbound calls of one request above which a warning is logged.',
    ),
    'enabled-when': enabledWhen(),
  }),
  slo: group('SLO-as-code: objectives rendered as multi-window, multi-burn-rate Prometheus rules.', {
    enabled: bool(false, 'Serve `/actuator/obs/slo` from the declared objectives.'),
    objectives: objectList(
      'Declared objectives (see SLO-as-code): the metric each counts, its label filters, target and, for latency, threshold.',
      ['name', 'metric'],
      {
        name: requiredText(
          'Objective name: it names the recording rules (`slo:<name>:error_ratio_rate5m`) and the alerts.',
          /^[a-zA-Z][a-zA-Z0-9_-]{0,62}$/,
          'a name of at most 63 letters, digits, _ and -, starting with a letter',
        ),
        sli: oneOf(['availability', 'latency'], 'availability', 'What is measured.'),
        target: ratio(0.999, 'Share of good events, above 0 and below 1.'),
        threshold: optionalDuration(
          "Latency threshold (latency objectives): one of the histogram's bucket bounds (`le`), in seconds.",
        ),
        metric: requiredText(
          'The series the SLI counts: a counter (availability, e.g. `http_requests_total`) or the base name of a seconds histogram (latency, e.g. `http_request_duration_seconds`, read as `_bucket` and `_count`).',
          METRIC_NAME,
          'a Prometheus metric name of at most 200 characters (letters, digits, _ and :)',
        ),
        filter: optionalText(
          'PromQL label matchers selecting the SLI\'s events, e.g. `job="api",fault="none"`; default all.',
          LABEL_MATCHERS,
          LABEL_MATCHERS_FORM,
        ),
        'error-filter': text(
          'status=~"5.."',
          'PromQL label matchers that make an event bad (availability objectives; latency ones count the events slower than the threshold).',
          LABEL_MATCHERS,
          LABEL_MATCHERS_FORM,
        ),
      },
    ),
  }),
  resilience: group('Resilience instrumentation (cockatiel, opossum, when handed to obs).', {
    enabled: bool(true, 'Turn breaker, retry and bulkhead events into metrics, span events and log lines.'),
  }),
  jobs: group('Background-job observability: RED metrics, in-flight gauge and health per job.', {
    enabled: bool(true, 'Instrument jobs registered with obs.'),
    'health-indicator-enabled': bool(
      true,
      'Report DOWN when a job has not succeeded within the grace period.',
    ),
    'failure-grace-period': duration('1h', 'How long a job may go without a success.'),
  }),
  db: group('Database N+1 and slow-query detection (pg, when handed to obs).', {
    enabled: bool(true, 'Count statements per request and flag slow queries.'),
    'n-plus-one-threshold': integer(
      50,
      1,
      1_000_000,
      'Runs of one statement shape in one request above which N+1 is suspected.',
    ),
    'slow-query-threshold': duration('500ms', 'A query slower than this is logged as slow.'),
    'enabled-when': enabledWhen(),
  }),
  cache: group('Cache observability (lru-cache).', {
    enabled: bool(false, 'Export hit, miss and eviction metrics of caches handed to obs.'),
  }),
  'feature-flags': group('Feature-flag evaluation correlation (an OpenFeature hook).', {
    enabled: bool(false, 'Put flag evaluations on the span and the log context.'),
  }),
  profiling: group('Continuous-profiling correlation (`@pyroscope/nodejs`).', {
    enabled: bool(false, 'Stamp `profile.id` and `pyroscope.profile_id` on spans.'),
    'pyroscope-url': optionalText(
      'Pyroscope base URL; adds a deep link to root spans.',
      /^https?:\/\/\S+$/,
      'an absolute http:// or https:// URL',
    ),
  }),
  'wide-events': group('Wide-event API: `obs.event(name, attributes)`.', {
    enabled: bool(true, 'Emit wide events (a no-op until called).'),
    'counter-enabled': bool(true, 'Count events in `obs_events_total{event}`.'),
    'log-enabled': bool(true, 'Write one log line per event.'),
    // events.ts
    'max-attributes': integer(32, 1, 256, 'Attributes kept per event; later ones are dropped.'),
    'max-attribute-length': integer(
      1024,
      16,
      65_536,
      'Characters kept of a text attribute value; longer values are cut.',
    ),
  }),
  shutdown: group('Graceful drain and telemetry flush.', {
    enabled: bool(true, 'Drain in-flight requests and flush telemetry on shutdown.'),
    'drain-timeout': duration('30s', 'Longest wait for in-flight requests.'),
    'flush-timeout': duration('10s', 'Longest wait for the telemetry flush.'),
  }),
  'config-drift': group('Fleet config-drift detection: a hash of the resolved tree.', {
    enabled: bool(true, 'Export `obs_config_info{hash}`.'),
  }),
  actuator: group('Live diagnostic actuator routes.', {
    enabled: bool(true, 'Register the actuator routes.'),
    'base-path': text(
      '/actuator',
      'Prefix of every actuator route.',
      /^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*[^/]$/,
      'a path starting with / and not ending with /',
    ),
    'ui-enabled': bool(true, 'Serve the HTML page `<base-path>/obsui`.'),
  }),
  // --- live diagnostics (diagnostics.ts) ---
  diagnostics: group('Live diagnostics: the runtime section of the snapshot and `<base-path>/obs/runtime`.', {
    enabled: bool(
      true,
      'Measure event-loop lag and report the live figures (top cardinality offenders, container memory).',
    ),
    'top-offenders': integer(
      10,
      1,
      1000,
      'Meter and label pairs listed in the runtime, most overflowed first.',
    ),
    'event-loop-resolution': duration('10ms', 'Sampling interval of the event-loop delay monitor.', 1, 1000),
  }),
  // --- end ---
  sampling: group('Head sampling of traces.', {
    enabled: bool(true, 'Apply the sampling settings (read by the host SDK setup).'),
    probability: ratio(1, 'Head-sampling rate, 0 to 1; also read from OTEL_TRACES_SAMPLER_ARG.'),
    'prefer-sampling-on-error': bool(true, 'Keep error spans the head sampler would drop (best effort).'),
  }),
  enforcement: group('Dry-run / enforcement mode.', {
    enabled: bool(true, 'Serve the enforcement routes; the mode can always be set from code.'),
    mode: oneOf(
      ENFORCEMENT_MODES,
      'ENFORCING',
      'Initial mode of every process; changed at runtime, never persisted.',
    ),
  }),
  'profile-presets': group('The shipped presets `application-obs-{dev,prod,test,canary}.yml`.', {
    'auto-apply': bool(
      false,
      'Apply the preset of the profile named by OBS_PROFILE, just above the defaults.',
    ),
  }),
});

export type ObsSchema = typeof OBS_SCHEMA;
/**
 * The resolved `obs.*` tree, as the library reads it. Durations are milliseconds. A planned
 * feature's subtree holds its defaults with `enabled: false`.
 */
export type ObsConfig = Resolved<ObsSchema>;
/**
 * Configuration passed in code: any part of the tree, the same shape as the YAML file under `obs:`.
 * A key of a planned feature (see `FEATURES`) is refused like in every other source.
 */
export type ObsConfigInput = Input<ObsSchema> & {
  /** @deprecated Use `enforcement.mode`; migrated at startup with one warning. */
  readonly runtime?: { readonly mode?: string };
};
/** The features that carry an `enabled-when` block. */
export type EnabledWhenFeature = {
  [K in keyof ObsConfig]: ObsConfig[K] extends { readonly 'enabled-when': unknown } ? K : never;
}[keyof ObsConfig];
/** The `enabled-when` block of a feature. */
export type EnabledWhen = ObsConfig['trace-guard']['enabled-when'];
