/**
 * The two lines a request logs by default (`LOG_REQUESTS`), written without a per-request child
 * logger and without pino's general per-line work, byte for byte as `request.log.info(msg)` would
 * write them: `{"level":30,"time":…,<the logger's bindings>,"reqId":"…",<mixin fields>,"msg":"…"}`,
 * through the logger's `hooks.streamWrite` (obs's masking) to the logger's stream.
 *
 * Every request pays for these lines, so they are built here from what the logger holds (its time
 * function, bindings, mixin, hook and stream, read through `pino.symbols`) instead of through a
 * child logger per request (fastify's default) and `info()`. A logger whose options change the line
 * in ways this does not reproduce (a `formatters.log`, a `nestedKey`, a `msgPrefix`, stringifiers
 * from `redact`, a stream that wants metadata, custom levels) gets no fast path: such lines go
 * through `request.log` as before. `test/echo/access-log.test.ts` holds the two to the same bytes.
 */
import { maskLogLine, mayHoldSecret } from '@echo-chaos/obs/internal';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import pino, { type Bindings, type ChildLoggerOptions, type Logger } from 'pino';
import type { AccessFormat } from './log-batch.ts';
import type { AccessRecordSink } from './log-thread.ts';

// Two of the symbols are missing from pino's types (they exist since pino 8 and 9).
const S = pino.symbols as typeof pino.symbols & {
  readonly msgPrefixSym: symbol;
  readonly mixinMergeStrategySym: symbol;
};
const INFO = 30;

type Mixin = (mergeObject: object, level: number, logger: Logger) => object;
type MergeStrategy = (mergeObject: object, mixinObject: object) => object;

interface PinoInternals {
  readonly [key: symbol]: unknown;
}

function defaultMergeStrategy(mergeObject: object, mixinObject: object): object {
  return Object.assign(mixinObject, mergeObject);
}

/** Writes a request's access lines; see the module comment. */
export interface AccessLog {
  /** Logs `msg` at info for the request with id `reqId` (fastify's `reqId` binding). */
  info(request: FastifyRequest, msg: string): void;
}

/** The fallback: the request's own logger. */
const VIA_REQUEST_LOG: AccessLog = {
  info(request, msg) {
    request.log.info(msg);
  },
};

/**
 * The access-line writer for `logger`: the fast one when the logger is a pino logger whose lines it
 * reproduces exactly, else one that logs through `request.log`.
 */
export function accessLog(logger: FastifyBaseLogger, requestIdLabel = 'reqId'): AccessLog {
  // Read as a pino logger: unless the checks below find pino's internals, VIA_REQUEST_LOG is used.
  const root = logger as Logger & PinoInternals;
  const formatters = root[S.formattersSym] as { log?: unknown } | undefined;
  const stringifiers = root[S.stringifiersSym] as Record<string | symbol, unknown> | undefined;
  const stream = root[S.streamSym] as { write(line: string): unknown; [key: symbol]: unknown } | undefined;
  const lsCache = root[S.lsCacheSym] as Record<number, string> | undefined;
  const serializers = (root[S.serializersSym] ?? {}) as Record<
    string,
    ((value: unknown) => unknown) | undefined
  >;
  const messageKey = root[S.messageKeySym];
  if (
    typeof root[S.asJsonSym] !== 'function' ||
    typeof root[S.timeSym] !== 'function' ||
    formatters === undefined ||
    formatters.log !== undefined ||
    stringifiers === undefined ||
    Object.keys(stringifiers).length > 0 ||
    stringifiers[S.wildcardFirstSym] !== undefined ||
    (root[S.nestedKeySym] ?? null) !== null ||
    (root[S.msgPrefixSym] ?? '') !== '' ||
    stream === undefined ||
    stream[S.needsMetadataGsym] === true ||
    lsCache?.[INFO] !== '{"level":30' ||
    typeof messageKey !== 'string' ||
    serializers[messageKey] !== undefined ||
    serializers[requestIdLabel] !== undefined ||
    (root as { levels?: { values?: Record<string, number> } }).levels?.values?.info !== INFO
  ) {
    return VIA_REQUEST_LOG;
  }
  const time = root[S.timeSym] as () => string;
  const mixin = root[S.mixinSym] as Mixin | undefined;
  const merge = (root[S.mixinMergeStrategySym] as MergeStrategy | undefined) ?? defaultMergeStrategy;
  const hooks = root[S.hooksSym] as { streamWrite?: (line: string) => string } | undefined;
  const streamWrite = hooks?.streamWrite;
  const end = root[S.endSym] as string;
  const label = `,${JSON.stringify(requestIdLabel)}:`;
  const msgLabel = `,${JSON.stringify(messageKey)}:`;
  /** `,"key":` of each mixin field, made once rather than on every line. */
  const keyPrefixes = new Map<string, string>();
  // obs's masking (the hook is its `maskLogLine`) starts with `mayHoldSecret`, a scan for runs of
  // letters, digits, spaces and dashes that could be a secret. The line is built of pieces joined
  // where JSON punctuation (`,"key":`, `"`, `}`) ends any such run, so it can hold one only where a
  // piece does: the pieces that come from code (the level, the bindings, the keys) are scanned
  // once, the ones that change (time, request id, mixin values, message) on every line, and a line
  // none of whose pieces may hold a secret skips the scan of the whole line. A line that may goes
  // through the hook whole, as before.
  const masksWithObs = streamWrite === maskLogLine;
  // Each piece that follows another starts with punctuation, or follows a piece that ends with it.
  const startsJoint = (text: string): boolean => text.length === 0 || isJoint(text.charCodeAt(0));
  const keyMayHold = (key: string): boolean =>
    mayHoldSecret(key) || !key.startsWith(',') || !key.endsWith(':'); // `,"key":`
  const fixedMayHold =
    mayHoldSecret(`{"level":30`) ||
    keyMayHold(label) ||
    keyMayHold(msgLabel) ||
    mayHoldSecret(end) ||
    !startsJoint(end);
  // The time piece changes once a millisecond at most (obs's and echo's time functions): its
  // verdict is kept while it stays the same string.
  let checkedTime: string | undefined;
  let timeClean = false;
  const timeIsClean = (t: string): boolean => {
    if (t !== checkedTime) {
      checkedTime = t;
      timeClean = !mayHoldSecret(t) && startsJoint(t);
    }
    return timeClean;
  };
  let checkedBindings: string | undefined;
  let bindingsMayHold = true;
  const prefixMayHold = new Map<string, boolean>();
  // With the default destination (log-thread.ts) the line is built, masked and written in a worker:
  // this thread hands over its parts, read now (the time, the bindings, the mixin's fields).
  const sink = isRecordSink(stream) ? stream : undefined;
  const offThread =
    sink !== undefined &&
    sink.masksAccessLines === masksWithObs &&
    (streamWrite === undefined || masksWithObs);
  const format: AccessFormat = { label, msgLabel, end };
  /** The mixin's fields of the line being logged: `,"key":` and the value's JSON, in pairs. */
  const pieces: string[] = [];

  /** Fills {@link pieces} from the mixin's object, as pino would write its fields. */
  const fieldPieces = (obj: object): void => {
    pieces.length = 0;
    const fields = obj as Record<string, unknown>;
    for (const key in fields) {
      if (!Object.hasOwn(fields, key)) continue;
      let value = fields[key];
      if (value === undefined) continue;
      const serialize = serializers[key];
      if (serialize !== undefined) value = serialize(value);
      let text: string | undefined;
      switch (typeof value) {
        case 'undefined':
        case 'function':
          continue;
        case 'number':
          text = Number.isFinite(value) ? String(value) : 'null';
          break;
        case 'boolean':
          text = String(value);
          break;
        case 'string':
          text = JSON.stringify(value);
          break;
        default:
          try {
            text = JSON.stringify(value);
          } catch {
            // what pino does with a value it cannot serialize, short of its safe stringify
            text = '"[unable to serialize, circular reference is too complex to analyze]"';
          }
      }
      if (text === undefined) continue;
      let prefix = keyPrefixes.get(key);
      if (prefix === undefined) {
        prefix = `,${JSON.stringify(key)}:`;
        // the mixin's keys are few and fixed; a bound keeps a mixin with ever-new keys from growing it
        if (keyPrefixes.size < 64) keyPrefixes.set(key, prefix);
      }
      pieces.push(prefix, text);
    }
  };

  return {
    info(request, msg) {
      if (!root.isLevelEnabled('info')) return;
      // pino's write(): the time, the mixin merged into the (empty) merge object, then asJson.
      const t = time();
      let obj: object = {};
      if (mixin !== undefined) obj = merge(obj, mixin(obj, INFO, root));
      const bindings = root[S.chindingsSym] as string;
      fieldPieces(obj);
      if (offThread) {
        sink.record(format, t, bindings, request.id, pieces, msg);
        return;
      }
      if (bindings !== checkedBindings) {
        // pino's setBindings() can change them
        checkedBindings = bindings;
        bindingsMayHold = mayHoldSecret(bindings) || !startsJoint(bindings);
      }
      const id = JSON.stringify(request.id);
      let clean =
        masksWithObs &&
        !fixedMayHold &&
        !bindingsMayHold &&
        timeIsClean(t) &&
        id !== undefined &&
        !mayHoldSecret(id);
      let line = `{"level":30${t}${bindings}${label}${id}`;
      for (let k = 0; k < pieces.length; k += 2) {
        const prefix = pieces[k]!;
        const text = pieces[k + 1]!;
        if (clean) {
          let held = prefixMayHold.get(prefix);
          if (held === undefined) {
            held = keyMayHold(prefix);
            if (prefixMayHold.size < 64) prefixMayHold.set(prefix, held);
          }
          clean = !held && !mayHoldSecret(text);
        }
        line += prefix + text;
      }
      const message = JSON.stringify(msg);
      if (clean) clean = !mayHoldSecret(message);
      line += `${msgLabel}${message}${end}`;
      stream.write(streamWrite === undefined || clean ? line : streamWrite(line));
    },
  };
}

function isRecordSink(stream: object): stream is AccessRecordSink & { write(line: string): unknown } {
  return typeof (stream as Partial<AccessRecordSink>).record === 'function';
}

/** `"`, `,`, `:`, `{`, `}`, `[`, `]` and a newline: JSON's punctuation, which ends every run `mayHoldSecret` looks for. */
function isJoint(c: number): boolean {
  return (
    c === 0x22 ||
    c === 0x2c ||
    c === 0x3a ||
    c === 0x7b ||
    c === 0x7d ||
    c === 0x5b ||
    c === 0x5d ||
    c === 0x0a
  );
}

type LevelMethod = (...args: unknown[]) => void;

/**
 * A request's logger that becomes a pino child (with the request's bindings) only when something
 * logs through it: most requests log nothing but their access lines ({@link accessLog}), and a
 * child per request is an object, a bindings string and a dozen property writes each.
 */
class LazyChildLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get #logger(): Logger {
    // fastify types its logger loosely; echo's is pino (app.ts), and so is each child of it.
    this.#child ??= this.#parent.child(this.#bindings, this.#options) as Logger;
    return this.#child;
  }

  get level(): string {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#logger.level = level;
  }

  fatal(...args: unknown[]): void {
    (this.#logger.fatal as LevelMethod)(...args);
  }
  error(...args: unknown[]): void {
    (this.#logger.error as LevelMethod)(...args);
  }
  warn(...args: unknown[]): void {
    (this.#logger.warn as LevelMethod)(...args);
  }
  info(...args: unknown[]): void {
    (this.#logger.info as LevelMethod)(...args);
  }
  debug(...args: unknown[]): void {
    (this.#logger.debug as LevelMethod)(...args);
  }
  trace(...args: unknown[]): void {
    (this.#logger.trace as LevelMethod)(...args);
  }
  silent(...args: unknown[]): void {
    (this.#logger.silent as LevelMethod)(...args);
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger.child(bindings, options);
  }
  isLevelEnabled(level: string): boolean {
    return this.#logger.isLevelEnabled(level);
  }
  bindings(): Record<string, unknown> {
    return this.#logger.bindings();
  }
  flush(cb?: (error?: Error) => void): void {
    this.#logger.flush(cb);
  }
}

/** fastify's `childLoggerFactory`: a {@link LazyChildLogger} per request. */
export function lazyChildLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyChildLogger(logger, bindings, options);
}
