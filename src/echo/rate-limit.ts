/**
 * A global token bucket: `rps` tokens a second, holding at most `burst`. One bucket for the whole
 * process, as `ECHO_RATE_LIMIT_RPS` is a global limit (not per client).
 */
export class TokenBucket {
  readonly rps: number;
  readonly burst: number;
  readonly #now: () => number;
  #tokens: number;
  #last: number;

  constructor(rps: number, burst: number, now: () => number = performance.now.bind(performance)) {
    this.rps = rps;
    this.burst = burst > 0 ? burst : Math.max(1, Math.ceil(rps));
    this.#now = now;
    this.#tokens = this.burst;
    this.#last = now();
  }

  /** Takes a token. Returns 0 when granted, else the milliseconds until the next token. */
  take(): number {
    const now = this.#now();
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.rps);
    this.#last = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.#tokens) / this.rps) * 1000);
  }
}

/** The `Retry-After` of a refusal that must wait `waitMs` for its token: whole seconds, at least 1. */
export function retryAfterSeconds(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/** Where a request takes its token: the fleet's bucket (a shared store that is up), else its own. */
export interface RateLimitSources {
  readonly rateLimit?: TokenBucket;
  readonly shared?: { takeToken(rps: number, burst: number): Promise<number> | undefined };
}

/**
 * Takes a request's token: the milliseconds to wait (0: granted), at once from the process's own
 * bucket, or as a promise from the fleet's (`ECHO_STATE_URL`). A fleet bucket that fails (Redis
 * went away mid-call) falls back to the process's own. `undefined`: no rate limit is set.
 */
export function takeRateToken(state: RateLimitSources): number | Promise<number> | undefined {
  const bucket = state.rateLimit;
  if (bucket === undefined) return undefined;
  const fleet = state.shared?.takeToken(bucket.rps, bucket.burst);
  if (fleet === undefined) return bucket.take();
  return fleet.catch(() => bucket.take());
}
