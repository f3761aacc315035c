/**
 * Slow bodies in the echo pipeline: which shaping a response body gets (`X-Echo-Throttle`,
 * `X-Echo-Chunk-Delay`, `X-Echo-Chunk-Size`, `X-Echo-Body-Delay`), admitted through the fault
 * ledger, and how the shaped body is handed to fastify.
 */
import { pipeline, type Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FaultKind, FaultSource } from './applied.ts';
import { type Controls, originOf } from './controls.ts';
import { stateOf } from './request-state.ts';
import { REAL_CLOCK, type ShapingPlan, ShapingStream } from './shaping.ts';

/**
 * The shaping stream of a response body, or `undefined` when it goes as it is. A HEAD response
 * has no body to shape. Marks the request's meters `delay` when it slows the body.
 */
export function shapingFor(
  request: FastifyRequest,
  controls: Controls,
  maxDelayMs: number,
  drainSignal: AbortSignal,
  fault: ApplyFault,
): ShapingStream | undefined {
  if (request.raw.method === 'HEAD') return undefined;
  const shaper = shapingStream(controls, maxDelayMs, drainSignal, fault);
  if (shaper === undefined) return undefined;
  const plan = shaper.plan;
  const slowed = plan.bytesPerSecond ?? plan.chunkDelayMs ?? plan.bodyDelayMs;
  const state = stateOf(request);
  if (slowed !== undefined && state.fault === 'none') state.fault = 'delay';
  return shaper;
}

/**
 * The shaping stream `controls` ask for, each part admitted through `fault`; `undefined` when
 * nothing shapes. For any byte stream: a response body, or what a WebSocket tunnel's upstream sends.
 */
export function shapingStream(
  controls: Controls,
  maxDelayMs: number,
  drainSignal: AbortSignal,
  fault: ApplyFault,
): ShapingStream | undefined {
  const plan = shapingPlan(controls, maxDelayMs, fault);
  return plan === undefined ? undefined : new ShapingStream(plan, REAL_CLOCK, drainSignal);
}

/**
 * Sends `source` through its shaping stream. The stream ends its source when the client leaves; a
 * body delay sends the headers first, as soon as fastify starts the body.
 */
export function shapeBody(
  reply: FastifyReply,
  source: Buffer | Readable,
  shaper: ShapingStream,
): ShapingStream {
  if (Buffer.isBuffer(source)) shaper.end(source);
  else pipeline(source, shaper, () => {});
  if (shaper.plan.bodyDelayMs !== undefined) reply.raw.once('pipe', () => reply.raw.flushHeaders());
  return shaper;
}

export type ApplyFault = (
  kind: FaultKind,
  control: string,
  source: FaultSource,
  value: string | number,
) => boolean;

/**
 * The shaping of a body, each part admitted through the fault ledger (`throttle` for the
 * bandwidth cap and the chunk delay, `delay` for the body delay). `X-Echo-Chunk-Size` alone only
 * cuts the body into chunks, no fault. `undefined`: the body goes as it is.
 */
function shapingPlan(controls: Controls, maxShapingMs: number, fault: ApplyFault): ShapingPlan | undefined {
  const { throttle, chunkDelayMs, chunkBytes, bodyDelayMs } = controls;
  // Each named by the control that gave it: its header, a scenario or a variable.
  const admit = (kind: FaultKind, field: 'throttle' | 'chunkDelay' | 'bodyDelay', value: string | number) => {
    const from = originOf(controls, field);
    return fault(kind, from.control, from.source, value);
  };
  const bytesPerSecond =
    throttle !== undefined && admit('throttle', 'throttle', throttle.text)
      ? throttle.bytesPerSecond
      : undefined;
  const chunkDelay =
    chunkDelayMs !== undefined && chunkDelayMs > 0 && admit('throttle', 'chunkDelay', chunkDelayMs)
      ? chunkDelayMs
      : undefined;
  const bodyDelay =
    bodyDelayMs !== undefined && bodyDelayMs > 0 && admit('delay', 'bodyDelay', bodyDelayMs)
      ? bodyDelayMs
      : undefined;
  if (
    bytesPerSecond === undefined &&
    chunkDelay === undefined &&
    bodyDelay === undefined &&
    chunkBytes === undefined
  )
    return undefined;
  return {
    maxShapingMs,
    ...(bytesPerSecond !== undefined ? { bytesPerSecond } : {}),
    ...(chunkDelay !== undefined ? { chunkDelayMs: chunkDelay } : {}),
    ...(bodyDelay !== undefined ? { bodyDelayMs: bodyDelay } : {}),
    ...(chunkBytes !== undefined ? { chunkBytes } : {}),
  };
}
