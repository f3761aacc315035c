/**
 * The scenario file: a YAML (or JSON) list of scenarios, the same shape as the body of
 * `POST /scenario`. Loaded once at startup and watched, so that a ConfigMap update applies without
 * a restart.
 */
import { createHash } from 'node:crypto';
import { readFileSync, type Stats, statSync, watch } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { CORE_SCHEMA, loadAll, YAMLException } from 'js-yaml';
import { isScenarioError, ScenarioError, ScenarioInvalidError, ScenarioSyntaxError } from './errors.ts';
import { MAX_SET_DEPTH, type Scenario } from './schema.ts';
import { copyScenario, type ValidateScenariosOptions, validateScenarios } from './validate.ts';

/** Default largest scenario file, in bytes: 16 MiB (a ConfigMap holds at most 1 MiB). */
export const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024;
/** Default quiet time after the last file system event before the file is re-read, in milliseconds. */
export const DEFAULT_WATCH_DEBOUNCE_MS = 100;
/**
 * Most YAML aliases (`*name`) one document may use. Anchors are handy for shared headers, but each
 * alias can repeat a large subtree, so they are bounded like everything else.
 */
export const MAX_YAML_ALIASES = 100;

/** Options of {@link loadScenarioFile} and {@link watchScenarioFile}. */
export interface ScenarioFileOptions extends ValidateScenariosOptions {
  /** Largest file accepted, in bytes. Default {@link DEFAULT_MAX_FILE_BYTES} (16 MiB). */
  readonly maxFileBytes?: number;
}

/**
 * Parses a scenario document: YAML 1.2 with the core schema (no custom tags, so no code), which
 * also reads JSON. An empty document (or `null`) is an empty list. Then validates it.
 * @param source names the document in errors, e.g. its file path or `request body`.
 * @returns the validated scenarios.
 * @throws `SCENARIO_ERR_FILE_SYNTAX` with `line` and `column` (1-based) when the text does not
 *   parse or holds more than one document; `SCENARIO_ERR_INVALID` with every problem in `problems`.
 */
export function parseScenarioDocument(
  text: string,
  source: string,
  options: ValidateScenariosOptions = {},
): Scenario[] {
  const result = validateScenarios(loadScenarioDocument(text, source), options);
  if (!result.ok) throw new ScenarioInvalidError(result.problems, source);
  return result.scenarios;
}

/**
 * Parses one YAML (or JSON) document of scenarios without validating it: what
 * {@link parseScenarioDocument} validates (an empty document is an empty list).
 * @throws ScenarioSyntaxError when the text is not one well-formed document.
 */
export function loadScenarioDocument(text: string, source: string): unknown {
  let documents: unknown[];
  try {
    // maxDepth: the parser refuses deep nesting itself, before building it (aliases are measured
    // after, without expanding them, by validateScenarios).
    documents = loadAll(text, {
      filename: source,
      schema: CORE_SCHEMA,
      maxAliases: MAX_YAML_ALIASES,
      maxDepth: MAX_SET_DEPTH,
    });
  } catch (error) {
    throw syntaxError(error, source);
  }
  if (documents.length > 1) {
    const line = secondDocumentLine(text);
    throw new ScenarioSyntaxError(source, line, 1, `expected one YAML document, found ${documents.length}`);
  }
  return documents[0] ?? [];
}

function syntaxError(error: unknown, source: string): Error {
  if (error instanceof YAMLException) {
    const line = (error.mark?.line ?? 0) + 1;
    const column = (error.mark?.column ?? 0) + 1;
    return new ScenarioSyntaxError(source, line, column, error.reason, { cause: error });
  }
  // js-yaml documents that anything may be thrown (e.g. a RangeError on a pathological input).
  const reason = error instanceof Error ? error.message : String(error);
  return new ScenarioSyntaxError(source, 1, 1, reason, { cause: error });
}

/** The line (1-based) of the `---` that starts the second document, for the error position. */
function secondDocumentLine(text: string): number {
  const lines = text.split(/\r?\n/);
  let content = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (/^---(?:\s|$)/.test(line)) {
      if (content) return i + 1;
      content = true;
    } else if (!/^\s*(?:#.*)?$/.test(line) && !line.startsWith('%')) {
      content = true;
    }
  }
  return 1;
}

/**
 * Reads and parses a scenario file (see {@link parseScenarioDocument}). Synchronous, for startup;
 * the watcher reads asynchronously.
 * @returns the validated scenarios.
 * @throws `SCENARIO_ERR_FILE_NOT_FOUND` when the file does not exist (a caller may treat a missing
 *   default file as "no scenarios"); `SCENARIO_ERR_FILE_UNREADABLE`, `SCENARIO_ERR_FILE_TOO_LARGE`,
 *   `SCENARIO_ERR_FILE_SYNTAX` or `SCENARIO_ERR_INVALID` otherwise. Every error names the path.
 */
export function loadScenarioFile(path: string, options: ScenarioFileOptions = {}): Scenario[] {
  const maxFileBytes = maxFileBytesOf(options);
  let text: string;
  try {
    // Stat before reading: opening a FIFO would block until someone writes to it.
    checkFileInfo(path, statSync(path), maxFileBytes);
    text = decodeText(path, readFileSync(path), maxFileBytes);
  } catch (error) {
    throw asFileError(path, error);
  }
  return parseScenarioDocument(text, path, options);
}

function maxFileBytesOf(options: ScenarioFileOptions): number {
  const { maxFileBytes = DEFAULT_MAX_FILE_BYTES } = options;
  if (!(typeof maxFileBytes === 'number' && maxFileBytes >= 0)) {
    throw new RangeError(`maxFileBytes must be a non-negative number of bytes, got ${String(maxFileBytes)}`);
  }
  return maxFileBytes;
}

async function readScenarioText(path: string, maxFileBytes: number): Promise<string> {
  try {
    checkFileInfo(path, await stat(path), maxFileBytes);
    return decodeText(path, await readFile(path), maxFileBytes);
  } catch (error) {
    throw asFileError(path, error);
  }
}

function checkFileInfo(path: string, info: Stats, maxFileBytes: number): void {
  if (!info.isFile()) throw new ScenarioError('SCENARIO_ERR_FILE_UNREADABLE', [path, 'not a regular file']);
  if (info.size > maxFileBytes) {
    throw new ScenarioError('SCENARIO_ERR_FILE_TOO_LARGE', [path, info.size, maxFileBytes]);
  }
}

function decodeText(path: string, bytes: Buffer, maxFileBytes: number): string {
  // It may have grown between stat and read.
  if (bytes.length > maxFileBytes) {
    throw new ScenarioError('SCENARIO_ERR_FILE_TOO_LARGE', [path, bytes.length, maxFileBytes]);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (error) {
    throw new ScenarioError('SCENARIO_ERR_FILE_UNREADABLE', [path, 'not UTF-8 text'], { cause: error });
  }
}

function asFileError(path: string, error: unknown): Error {
  return isScenarioError(error) ? error : fileError(path, error);
}

function fileError(path: string, error: unknown): Error {
  const code = isCoded(error) ? error.code : undefined;
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    return new ScenarioError('SCENARIO_ERR_FILE_NOT_FOUND', [path], { cause: error });
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new ScenarioError('SCENARIO_ERR_FILE_UNREADABLE', [path, reason], { cause: error });
}

function isCoded(error: unknown): error is { code: string } {
  return (
    typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string'
  );
}

/** Options of {@link watchScenarioFile}. */
export interface WatchScenarioFileOptions extends ScenarioFileOptions {
  /** Called with the new set after the file changed to valid, different content. */
  readonly onChange: (scenarios: Scenario[]) => void;
  /**
   * Called when the file changed to something unusable (invalid, vanished, unreadable) or the
   * watcher failed; the caller keeps its current set. Also receives what `onChange` throws.
   * What it throws itself is dropped, so a logging mistake cannot stop the watcher.
   */
  readonly onError: (error: Error) => void;
  /** Quiet time after the last event before re-reading, in milliseconds. Default 100. */
  readonly debounceMs?: number;
  /**
   * The set the caller already has, usually from {@link loadScenarioFile}. The watcher compares the
   * file with it from its first look on, so a change made between that load and the watch is not
   * lost: a different valid set goes to `onChange`, an unusable file to `onError` (except a
   * missing file when `initial` is empty: "no file, no scenarios" is then the known state).
   * Default: whatever the file holds when the watcher starts is the baseline, reported to no one
   * (so a change racing the start may go unseen until the next one).
   */
  readonly initial?: readonly Scenario[];
}

/** A running watch; see {@link watchScenarioFile}. */
export interface ScenarioFileWatcher {
  /**
   * Settles (never rejects) once the watcher's first look at the file is done: from then on the
   * baseline is set and only file system events lead to callbacks.
   */
  readonly ready: Promise<void>;
  /** Stops watching and cancels any pending re-read; no callback runs afterwards. Idempotent. */
  close(): void;
}

/**
 * Watches a scenario file and reports each valid change. It watches the file's directory, not the
 * file, so it sees in-place rewrites, editors that write a new file and rename it over the old one,
 * and Kubernetes ConfigMap volumes, which swap a `..data` symlink. Events are debounced, the file
 * is re-read and content equal to the current set is ignored (also a change back after an error).
 * A broken state is reported once, not on every event. The watcher does not keep the process alive.
 * @throws `SCENARIO_ERR_FILE_NOT_FOUND` when the directory does not exist,
 *   `SCENARIO_ERR_FILE_UNREADABLE` when it cannot be watched.
 */
export function watchScenarioFile(path: string, options: WatchScenarioFileOptions): ScenarioFileWatcher {
  const { onChange, onError, debounceMs = DEFAULT_WATCH_DEBOUNCE_MS, initial } = options;
  if (!(typeof debounceMs === 'number' && debounceMs >= 0 && Number.isFinite(debounceMs))) {
    throw new RangeError(
      `debounceMs must be a non-negative number of milliseconds, got ${String(debounceMs)}`,
    );
  }
  const maxFileBytes = maxFileBytesOf(options);
  const validateOptions: ValidateScenariosOptions = {
    maxDelayMs: options.maxDelayMs,
    maxResponseBytes: options.maxResponseBytes,
  };
  const directory = dirname(resolve(path));

  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  let started = false;
  /** Fingerprint of the last text read, or of the last read error, so a state is handled once. */
  let seen: string | undefined;
  /** Fingerprint of the set the caller holds. */
  let applied = initial === undefined ? undefined : fingerprint(JSON.stringify(initial.map(copyScenario)));

  const report = (error: unknown): void => {
    try {
      onError(error instanceof Error ? error : new Error(String(error)));
    } catch {
      // See `onError`: dropped on purpose.
    }
  };

  const checkOnce = async (): Promise<void> => {
    const first = !started;
    started = true;
    let text: string;
    try {
      text = await readScenarioText(path, maxFileBytes);
    } catch (error) {
      const code = isCoded(error) ? error.code : String(error);
      if (closed || `error:${code}` === seen) return;
      seen = `error:${code}`;
      // No file and no scenarios is the state a caller starts in when a default file is missing.
      const known =
        first && (initial === undefined || (initial.length === 0 && code === 'SCENARIO_ERR_FILE_NOT_FOUND'));
      if (!known) report(error);
      return;
    }
    const textPrint = fingerprint(text);
    if (closed || textPrint === seen) return;
    seen = textPrint;
    let scenarios: Scenario[];
    try {
      scenarios = parseScenarioDocument(text, path, validateOptions);
    } catch (error) {
      if (!(first && initial === undefined)) report(error);
      return;
    }
    const setPrint = fingerprint(JSON.stringify(scenarios));
    if (setPrint === applied) return;
    const baseline = first && applied === undefined;
    const previous = applied;
    applied = setPrint;
    if (baseline) return;
    try {
      onChange(scenarios);
    } catch (error) {
      // Not applied after all: the next change that parses to this set offers it again.
      applied = previous;
      report(error);
    }
  };

  const check = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await checkOnce();
      } while (again && !closed);
    } finally {
      running = false;
    }
  };

  const schedule = (): void => {
    if (closed) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void check();
    }, debounceMs);
    timer.unref();
  };

  let watcher: ReturnType<typeof watch>;
  try {
    // Any entry of the directory may matter (`..data`, an editor's temporary file renamed over
    // ours), and re-reading is cheap and idempotent, so every event schedules a check.
    watcher = watch(directory, { persistent: false }, schedule);
  } catch (error) {
    throw fileError(path, error);
  }
  watcher.on('error', (error) => {
    if (!closed)
      report(
        new ScenarioError('SCENARIO_ERR_FILE_UNREADABLE', [path, `watch failed: ${error.message}`], {
          cause: error,
        }),
      );
  });
  watcher.unref();
  const ready = check();

  return {
    ready,
    close(): void {
      if (closed) return;
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      watcher.close();
    },
  };
}

function fingerprint(text: string): string {
  return createHash('sha256').update(text).digest('base64');
}
