/**
 * The reverse proxy's WebSocket handshakes (issue #32): an upgrade no fastify request speaks for
 * (node hands it over as a socket) gets the faults any forwarded request gets, decided by the same
 * `fault-decision.ts` from its `X-Echo-*` headers, the scenario it matches and the environment's
 * defaults, counted in the same ledger, meters and history. In the direction that makes sense for a
 * handshake:
 * - before the upstream is called: a delay holds the handshake; chaos, an error status and a
 *   replaced status answer it instead (the upstream is never called); `timeout` holds it, then 504;
 *   `reset`, `close`, `empty` and `blackhole` end the connection as they end a request's; `garbage`
 *   sends random bytes; `truncate` and `malformed` send a broken `101` (half of its head, or a head
 *   with a line that is not a header); a scenario without `upstream` answers with its response;
 * - on the tunnel: throttle, chunk delay and body delay slow what the upstream sends; `slow-close`
 *   holds the client's side open after the upstream has ended; set headers, a scenario's headers,
 *   `X-Echo-Fault` and `X-Echo-Applied` are added to the `101`.
 * ADR 0036 says why the handshake is decided here rather than routed through fastify.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { applyFault, type FaultGate, type FaultSubject, faultsAllowed } from './applied.ts';
import { garbage } from './broken-bodies.ts';
import { CLIENT_CLOSED_STATUS, NO_RESPONSE_STATUS } from './completion.ts';
import type { EchoConfig } from './config.ts';
import { type Controls, parseControls } from './controls.ts';
import { rawErrorResponse } from './error-handler.ts';
import { EchoError } from './errors.ts';
import { createFaultDecider, forwardTo, type ScenarioMatcher, scenarioRequestOf } from './fault-decision.ts';
import { completeEntry, type History, type HistoryEntry } from './history.ts';
import type { EchoFault, EchoMetrics } from './metrics.ts';
import { headerLines, type Upstream, type UpstreamOutcome, type Upstreams } from './proxy.ts';
import { type RandomSource, requestSeed, seededRandom } from './random.ts';
import { type ApplyFault, shapingStream } from './slow-bodies.ts';

/** What the handshakes of one app need. */
export interface UpgradeDeps {
  readonly config: EchoConfig;
  readonly random: RandomSource;
  readonly history: History;
  readonly scenarios: ScenarioMatcher;
  readonly metrics: EchoMetrics;
  readonly faults: FaultGate;
  /** Aborted when the drain runs out of time: waits end and the handshake is answered. */
  readonly drainSignal: AbortSignal;
  /** `ECHO_UPSTREAM`'s: where a handshake no scenario answers is tunnelled. */
  readonly upstream: Upstream;
  /** Every upstream, by URL: a scenario's `upstream` is tunnelled through it. */
  readonly upstreams: Upstreams;
}

/** RFC 6455 4.2.2: the GUID a server appends to the client's key for `Sec-WebSocket-Accept`. */
const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** The handler of every WebSocket upgrade in proxy mode (`state.upgradeHandlers`' `*`). */
export function createUpgradeForwarder(deps: UpgradeDeps) {
  const { config, metrics, history } = deps;
  const limits = { maxDelayMs: config.maxDelayMs, maxResponseBytes: config.maxResponseBytes };
  const decide = createFaultDecider(config, deps.scenarios);

  async function handshake(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const started = performance.now();
    const seed = requestSeed(request.headers);
    const random = seed === undefined ? deps.random : seededRandom(seed);
    const parsed = parseControls(request.headers, limits, random);
    if (parsed.problems.length > 0) {
      const fields = parsed.problems.map((p) => p.field).join(', ');
      return refuse(socket, rawErrorResponse(new EchoError('ECHO_ERR_INVALID_HEADER', [fields])));
    }
    const url = request.url ?? '/';
    const path = url.split('?', 1)[0] ?? '/';
    const sentId = request.headers['x-request-id'];
    const requestId = typeof sentId === 'string' && sentId !== '' ? sentId : randomUUID();
    const entry =
      parsed.controls.historyEnabled === false
        ? undefined
        : history.record({
            requestId,
            method: 'GET',
            url,
            headers: request.headers,
            body: undefined,
            remoteAddr: request.socket.remoteAddress ?? '',
            protocol: `HTTP/${request.httpVersion}`,
            idMayRepeat: typeof sentId === 'string',
          });

    // The handshake as the fault ledger sees a request: its faults, and the headers they add.
    const subject: FaultSubject & { historyEntry: HistoryEntry | undefined } = {
      faults: undefined,
      explain: parsed.controls.explain === true,
      historyEntry: entry,
    };
    const added: Record<string, string> = {};
    // The slot a faulted handshake takes in the safety valve is given back once it is answered.
    let release: (() => void) | undefined;
    const answer = {
      raw: {
        headersSent: false,
        once(_event: 'close', listener: () => void): void {
          release = listener;
        },
      },
      header(name: string, value: string): void {
        added[name] = value;
      },
    };
    const fault: ApplyFault = (kind, control, source, value) =>
      applyFault(subject, answer, deps.faults, metrics, { kind, control, source, value });

    let faultLabel: EchoFault = 'none';
    let recorded = false;
    /** The handshake's end, recorded once: meters, history, the safety valve's slot. */
    const finish = (status: number) => {
      if (recorded) return;
      recorded = true;
      answer.raw.headersSent = true;
      release?.();
      const ms = performance.now() - started;
      if (entry !== undefined) completeEntry(entry, status, ms);
      metrics.recordRequest('GET', path, status, ms / 1000, faultLabel);
    };

    const deciding = decide({
      parsed,
      random,
      scenarioRequest: () => scenarioRequestOf('GET', url, request.headers, undefined),
      fault,
      allowed: () => faultsAllowed(subject, deps.faults),
    });
    const decided = deciding instanceof Promise ? await deciding : deciding;
    const { step, delayMs } = decided;
    const controls = decided.controls;
    if (decided.scenarioApplied) faultLabel = 'scenario';
    else if (delayMs > 0) faultLabel = 'delay';
    for (const [name, value] of controls.setHeaders ?? []) added[name] = value;
    if (step !== undefined) Object.assign(added, step.headers);

    if (delayMs > 0 && (await wait(delayMs, socket, deps.drainSignal)) === 'client-gone') {
      return finish(CLIENT_CLOSED_STATUS);
    }

    const injected = (status: number, kind: string) => {
      finish(status);
      const body = `${status} ${STATUS_CODES[status] ?? 'Error'} (injected by echo-chaos: ${kind})\n`;
      refuse(
        socket,
        httpAnswer(status, withRetryAfter(added, controls, status), body, 'text/plain; charset=utf-8'),
      );
    };

    const chaosStatus = decided.chaosStatus;
    if (chaosStatus !== undefined) {
      const fromHeader = decided.chaosFromHeader;
      if (
        fault('chaos', fromHeader ? 'X-Echo-Chaos' : 'ECHO_CHAOS', fromHeader ? 'header' : 'env', chaosStatus)
      ) {
        metrics.recordFault('chaos');
        faultLabel = 'chaos';
        return injected(chaosStatus, 'chaos');
      }
    }

    let lingerMs: number | undefined;
    const error = controls.error;
    if (error !== undefined) {
      const from = controls.origins?.error ?? { control: 'X-Echo-Error', source: 'header' as const };
      const value = error.kind === 'status' ? error.status : error.kind;
      const kind = error.kind === 'status' || error.kind === 'timeout' ? 'error' : error.kind;
      if (fault(kind, from.control, from.source, value)) {
        faultLabel = 'error';
        metrics.recordFault(error.kind === 'status' ? error.name : error.kind);
        switch (error.kind) {
          case 'status':
            return injected(error.status, 'error');
          case 'timeout':
            if ((await wait(config.errorTimeoutMs, socket, deps.drainSignal)) === 'client-gone') {
              return finish(CLIENT_CLOSED_STATUS);
            }
            return injected(504, 'timeout');
          case 'reset':
            finish(NO_RESPONSE_STATUS);
            return void ((socket as Partial<Socket>).resetAndDestroy?.call(socket) ?? socket.destroy());
          case 'close':
          case 'empty':
            finish(NO_RESPONSE_STATUS);
            return void socket.end();
          case 'blackhole':
            if ((await wait(config.requestTimeoutMs, socket, deps.drainSignal)) === 'client-gone') {
              return finish(CLIENT_CLOSED_STATUS);
            }
            finish(NO_RESPONSE_STATUS);
            return void socket.end();
          case 'garbage':
            finish(NO_RESPONSE_STATUS);
            return void socket.end(garbage(random));
          case 'truncate':
          case 'malformed': {
            finish(101);
            const head = switchingHead(request, added, error.kind === 'malformed');
            return void socket.end(error.kind === 'truncate' ? head.subarray(0, head.length >> 1) : head);
          }
          case 'slow-close':
            lingerMs = config.errorTimeoutMs;
            break;
        }
      }
    }

    // A replaced status answers the handshake instead of the upstream's 101 (the upstream is not called).
    if (controls.status !== undefined) {
      const from = controls.origins?.status ?? { control: 'X-Echo-Status', source: 'header' as const };
      if (fault('status', from.control, from.source, controls.status)) {
        if (faultLabel === 'none' || faultLabel === 'delay') faultLabel = 'status';
        return injected(controls.status, 'status');
      }
    }

    const to = forwardTo(decided);
    const target =
      to === 'default' ? deps.upstream : to === undefined ? undefined : await deps.upstreams.get(to);
    if (target === undefined) {
      // A scenario without `upstream` answers the handshake with its own response (no upgrade).
      const status = step?.status ?? 200;
      finish(status);
      const type = step?.headers['content-type'] ?? 'text/plain; charset=utf-8';
      return refuse(
        socket,
        httpAnswer(status, withRetryAfter(added, controls, status), step?.body ?? '', type),
      );
    }
    if (socket.destroyed) return finish(CLIENT_CLOSED_STATUS);

    const shaper = shapingStream(controls, config.maxDelayMs, deps.drainSignal, fault);
    const outcome: UpstreamOutcome = { url: target.label, status: null, duration_ms: null };
    if (entry !== undefined) entry.upstream = outcome;
    // The ledger's headers as they stand now: the tunnel adds them to the upstream's 101.
    target.tunnel(request, socket, head, request.socket.remoteAddress ?? '', {
      headers: added,
      ...(shaper === undefined ? {} : { shaper }),
      ...(lingerMs === undefined ? {} : { lingerMs }),
      onHandshake: ({ status, headMs, failure }) => {
        if (status === 'client-gone') return finish(CLIENT_CLOSED_STATUS);
        outcome.status = failure === undefined ? status : null;
        outcome.duration_ms = Math.round(headMs);
        if (failure !== undefined) outcome.error = failure.message;
        metrics.upstreamAnswered(outcome.status ?? 'error', headMs / 1000);
        finish(status);
      },
    });
  }

  return (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    handshake(request, socket, head).catch(() => socket.destroy());
  };
}

/** A whole HTTP/1.1 answer to a handshake that is not upgraded; the connection closes after it. */
function httpAnswer(
  status: number,
  headers: Readonly<Record<string, string>>,
  body: string,
  type: string,
): string {
  const bytes = Buffer.byteLength(body);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n` +
    `content-type: ${type}\r\ncontent-length: ${bytes}\r\n${headerLines(headers)}connection: close\r\n\r\n${body}`
  );
}

/** As the echo's own answers: `Retry-After` as asked, else `1` on an injected 429 or 503. */
function withRetryAfter(
  headers: Readonly<Record<string, string>>,
  controls: Controls,
  status: number,
): Readonly<Record<string, string>> {
  if (controls.retryAfter !== undefined) return { ...headers, 'retry-after': controls.retryAfter };
  if ((status === 429 || status === 503) && headers['retry-after'] === undefined)
    return { ...headers, 'retry-after': '1' };
  return headers;
}

/** A `101` head for the client's key (`malformed`: with a line that is not a header). */
function switchingHead(
  request: IncomingMessage,
  headers: Readonly<Record<string, string>>,
  malformed: boolean,
): Buffer {
  const key = String(request.headers['sec-websocket-key'] ?? '');
  const accept = createHash('sha1').update(`${key}${WEBSOCKET_GUID}`).digest('base64');
  return Buffer.from(
    'HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n' +
      `sec-websocket-accept: ${accept}\r\n${headerLines(headers)}${malformed ? 'this is not a header\r\n' : ''}\r\n`,
  );
}

/** Writes `answer` and ends the connection (destroyed a second later if the client keeps it). */
function refuse(socket: Duplex, answer: string): void {
  try {
    if (socket.writable) socket.write(answer);
  } finally {
    socket.end();
    setTimeout(() => socket.destroy(), 1000).unref();
  }
}

/** Waits `ms`, ending early when the client leaves (`client-gone`) or the drain's deadline passes. */
function wait(ms: number, socket: Duplex, drainSignal: AbortSignal): Promise<'done' | 'client-gone'> {
  if (drainSignal.aborted) return Promise.resolve('done');
  if (socket.destroyed) return Promise.resolve('client-gone');
  return new Promise((resolve) => {
    const finish = (outcome: 'done' | 'client-gone') => {
      clearTimeout(timer);
      socket.removeListener('close', onClose);
      drainSignal.removeEventListener('abort', onDrain);
      resolve(outcome);
    };
    const onClose = () => finish('client-gone');
    const onDrain = () => finish('done');
    // A timer may fire up to 1 ms early (libuv's whole milliseconds): an injected wait never is shorter.
    const due = performance.now() + ms;
    const onTimer = () => {
      const left = due - performance.now();
      if (left > 0) timer = setTimeout(onTimer, Math.ceil(left));
      else finish('done');
    };
    let timer = setTimeout(onTimer, ms);
    socket.once('close', onClose);
    drainSignal.addEventListener('abort', onDrain, { once: true });
  });
}
