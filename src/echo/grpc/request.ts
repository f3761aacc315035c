/**
 * The bounds of what a gRPC request asks for (every knob a client controls has a ceiling, and over
 * it is a bad request: here `INVALID_ARGUMENT` naming the field). Pure, without grpc-js.
 */
import { DURATION_FORM, parseDurationMs } from '@echo-chaos/obs/internal';

/** Most answers one `ServerStream` call sends. */
export const MAX_STREAM_COUNT = 1000;
/** Longest wait between two answers of `ServerStream`. */
export const MAX_STREAM_INTERVAL_MS = 60_000;

/** A `StreamRequest` as proto-loader hands it (`keepCase`, defaults filled in). */
export interface StreamRequestFields {
  readonly count?: number;
  readonly interval?: string;
  readonly response_size?: number;
}

/** What a `ServerStream` call sends, read from its request. */
export interface StreamPlan {
  readonly count: number;
  readonly intervalMs: number;
  readonly responseBytes: number;
}

export type StreamPlanRead =
  | { readonly ok: true; readonly plan: StreamPlan }
  | { readonly ok: false; readonly problem: string };

/** Reads a `StreamRequest` against the ceilings: `response_size` at most `maxResponseBytes` (`ECHO_MAX_RESPONSE_SIZE`). */
export function readStreamRequest(request: StreamRequestFields, maxResponseBytes: number): StreamPlanRead {
  const count = request.count ?? 0;
  if (!Number.isInteger(count) || count < 1 || count > MAX_STREAM_COUNT)
    return { ok: false, problem: `count: expected 1-${MAX_STREAM_COUNT}, got ${count}` };
  const interval = (request.interval ?? '').trim();
  let intervalMs = 0;
  if (interval !== '') {
    const ms = parseDurationMs(interval);
    if (ms === undefined)
      return { ok: false, problem: `interval: expected ${DURATION_FORM}, got ${JSON.stringify(interval)}` };
    if (ms > MAX_STREAM_INTERVAL_MS)
      return {
        ok: false,
        problem: `interval: expected at most ${MAX_STREAM_INTERVAL_MS / 1000}s, got ${JSON.stringify(interval)}`,
      };
    intervalMs = ms;
  }
  const responseBytes = request.response_size ?? 0;
  if (!Number.isInteger(responseBytes) || responseBytes < 0 || responseBytes > maxResponseBytes)
    return {
      ok: false,
      problem: `response_size: expected 0-${maxResponseBytes} bytes (ECHO_MAX_RESPONSE_SIZE), got ${responseBytes}`,
    };
  return { ok: true, plan: { count, intervalMs, responseBytes } };
}
