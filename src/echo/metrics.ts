import type { CardinalityFirewall } from '@echo-chaos/obs';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

const UNLABELLED_TOTAL_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** The echo service's own meters, on a registry of their own (one per app, so tests stay apart). */
export class EchoMetrics {
  readonly registry: Registry;
  readonly #requests: Counter<'method' | 'path' | 'status'>;
  readonly #duration: Histogram;
  readonly #chaos: Counter<'type'>;
  readonly #firewall: CardinalityFirewall;

  constructor(firewall: CardinalityFirewall, registry: Registry = new Registry()) {
    this.registry = registry;
    this.#firewall = firewall;
    collectDefaultMetrics({ register: registry });
    // prom-client names three gauges `..._total`, which Prometheus reserves for counters (promtool
    // rejects the scrape). Each is the sum of its labelled sibling (`nodejs_active_handles{type}`...).
    for (const name of UNLABELLED_TOTAL_GAUGES) registry.removeSingleMetric(name);
    this.#requests = new Counter({
      name: 'echo_requests_total',
      help: 'HTTP requests served, by method, path and status',
      labelNames: ['method', 'path', 'status'],
      registers: [registry],
    });
    this.#duration = new Histogram({
      name: 'echo_request_duration_seconds',
      help: 'HTTP request latency in seconds, injected delays included',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    });
    this.#chaos = new Counter({
      name: 'echo_chaos_errors_total',
      help: 'Injected failures, by type (chaos, or the X-Echo-Error value)',
      labelNames: ['type'],
      registers: [registry],
    });
  }

  recordRequest(method: string, path: string, status: number, seconds: number): void {
    this.#requests.inc({ method, path: this.#firewall.admit('echo_requests_total', 'path', path), status });
    this.#duration.observe(seconds);
  }

  recordFault(type: string): void {
    this.#chaos.inc({ type });
  }
}
