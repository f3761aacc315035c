/**
 * One second of the console's charts, as the live stream sends it (`event: point`) and the page
 * draws it: what the service made of the requests that finished in that second (chart-series.ts).
 */
export interface ChartPoint {
  /** The second's end, epoch seconds. */
  readonly t: number;
  /** Requests that finished in it. */
  readonly requests: number;
  /** Those per second (the second as measured, so about `requests`). */
  readonly rps: number;
  /** Median latency in ms (exact below 64 ms, within about 3% above); null without requests. */
  readonly p50: number | null;
  /** 99th percentile latency in ms, as `p50`; null without requests. */
  readonly p99: number | null;
  /** Requests by status class: 1xx, 2xx, 3xx, 4xx, 5xx. */
  readonly status: readonly number[];
  /** Requests answered with at least one injected fault. */
  readonly faulted: number;
}
