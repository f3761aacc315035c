/**
 * The failures a request can have injected: what a chaos draw answers with, and what
 * `X-Echo-Error` accepts (a status 400-599, a name for one, `random`, or a failure that is not a
 * status: `timeout`, `reset`, `close`, and the broken bodies `empty`, `truncate`, `malformed`,
 * `garbage`).
 */
import { pick, type RandomSource } from './random.ts';

/** What `X-Echo-Error` asked for. A status fault carries the status it answers with. */
export type ErrorFault =
  | { readonly kind: 'status'; readonly name: string; readonly status: number }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'reset' }
  | { readonly kind: 'close' }
  | { readonly kind: BrokenBodyKind };

/**
 * A response broken on purpose: `empty` (the connection closes with nothing sent), `truncate`
 * (a `Content-Length` promises the whole body, half comes), `malformed` (an invalid chunk in a
 * chunked body), `garbage` (random bytes, nothing HTTP-shaped, then the connection closes).
 */
export type BrokenBodyKind = 'empty' | 'truncate' | 'malformed' | 'garbage';

/** Statuses a chaos draw and `X-Echo-Error: random` pick from. */
export const CHAOS_STATUSES = [500, 502, 503, 504, 408, 429] as const;
export const RANDOM_ERROR_STATUSES = [500, 502, 503, 504, 429] as const;

/** Named `X-Echo-Error` values that answer with a status. */
export const NAMED_ERRORS: Readonly<Record<string, number>> = {
  internal: 500,
  'bad-gateway': 502,
  unavailable: 503,
  'gateway-timeout': 504,
  'rate-limit': 429,
};

/** The form of an `X-Echo-Error` value, for the 400 a bad one gets. */
export const ERROR_FAULT_FORM =
  'a status 400-599, one of internal, bad-gateway, unavailable, gateway-timeout, rate-limit, random, timeout, reset, close, empty, truncate, malformed, garbage';

/** Reads an `X-Echo-Error` value (case-insensitive); `random` draws its status now. */
export function parseErrorFault(value: string, random: RandomSource): ErrorFault | undefined {
  const v = value.trim().toLowerCase();
  if (/^\d{3}$/.test(v)) {
    const status = Number(v);
    return status >= 400 && status <= 599 ? { kind: 'status', name: v, status } : undefined;
  }
  // Own properties only: `constructor` or `__proto__` must not find Object's.
  const named = Object.hasOwn(NAMED_ERRORS, v) ? NAMED_ERRORS[v] : undefined;
  if (named !== undefined) return { kind: 'status', name: v, status: named };
  switch (v) {
    case 'random':
      return { kind: 'status', name: 'random', status: pick(RANDOM_ERROR_STATUSES, random) };
    case 'timeout':
    case 'reset':
    case 'close':
    case 'empty':
    case 'truncate':
    case 'malformed':
    case 'garbage':
      return { kind: v };
    default:
      return undefined;
  }
}
