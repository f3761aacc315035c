/**
 * Stable exception fingerprints (`obs.exception-handler`).
 *
 * A fingerprint is the SHA-256 of the error's type and its top stack frames, each frame reduced to
 * its function name and its file path relative to the package it belongs to (the nearest directory
 * with a `package.json`, or the path below `node_modules/`), without line or column numbers and
 * without absolute paths. The same bug keeps its fingerprint when lines move, across deploys to
 * other directories and across machines; the message (which carries ids and values) is left out.
 * `node:` frames are left out too, since they change with the Node.js version.
 *
 * What a fastify app does with fingerprints (log line, span, metric, problem answers) is
 * `exception-handler.ts`.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Stack frames a fingerprint covers by default (`obs.exception-handler.fingerprint-frames`). */
export const DEFAULT_FINGERPRINT_FRAMES = 5;

/** One stack frame as a fingerprint sees it. */
export interface FingerprintFrame {
  /**
   * The function name (`<anonymous>` when it has none), without `async `, `new `, a `Module.` or
   * `Object.` receiver or an `[as alias]`; a class receiver stays (`OrderService.place`).
   */
  readonly fn: string;
  /** The file relative to its package (`src/orders.ts`, `node_modules/pg/lib/client.js`). */
  readonly file: string;
}

const MAX_NAME_CHARS = 200;

/**
 * The type of a thrown value as a fingerprint and a metric label see it: the constructor name, the
 * `name` when it differs, and the `code` (`FastifyError[FST_ERR_VALIDATION]`); `typeof` for values
 * that are not objects. Never throws.
 */
export function errorType(error: unknown): string {
  try {
    if (typeof error !== 'object' || error === null) return typeof error;
    const ctor = (error as { constructor?: { name?: unknown } }).constructor?.name;
    const name = (error as { name?: unknown }).name;
    const code = (error as { code?: unknown }).code;
    const names = [ctor, name].filter(
      (n): n is string => typeof n === 'string' && n !== '' && n.length <= MAX_NAME_CHARS,
    );
    let type = [...new Set(names)].join('/') || 'Object';
    if ((typeof code === 'string' && code.length <= MAX_NAME_CHARS) || typeof code === 'number') {
      type += `[${code}]`;
    }
    return type;
  } catch {
    return 'unknown';
  }
}

/** Directory → the package root it lies in (or null); bounded, cleared when full. */
const packageRoots = new Map<string, string | null>();
const MAX_CACHED_DIRECTORIES = 4096;

function packageRootOf(directory: string): string | null {
  const visited: string[] = [];
  let dir = directory;
  let found: string | null = null;
  for (;;) {
    const cached = packageRoots.get(dir);
    if (cached !== undefined) {
      found = cached;
      break;
    }
    visited.push(dir);
    if (existsSync(join(dir, 'package.json'))) {
      found = dir;
      break;
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  if (packageRoots.size + visited.length > MAX_CACHED_DIRECTORIES) packageRoots.clear();
  for (const v of visited) packageRoots.set(v, found);
  return found;
}

/** A frame's location without line and column, relative to its package. */
function normalizeLocation(location: string): string {
  let file = location.replace(/:\d+(?::\d+)?$/, '');
  if (file.startsWith('file://')) {
    try {
      file = fileURLToPath(file);
    } catch {
      // keep the URL text
    }
  }
  if (!isAbsolute(file)) return file.replaceAll('\\', '/');
  file = file.split(sep).join('/');
  const modules = file.lastIndexOf('/node_modules/');
  if (modules !== -1) return `node_modules/${file.slice(modules + '/node_modules/'.length)}`;
  const root = packageRootOf(dirname(file));
  if (root !== null) return relative(root, file).split(sep).join('/');
  const cwd = process.cwd();
  if (file.startsWith(`${cwd.split(sep).join('/')}/`)) return relative(cwd, file).split(sep).join('/');
  return file.slice(file.lastIndexOf('/') + 1);
}

const FRAME = /^\s*at (?:(.*?) \((.*)\)|(.*))$/;

/**
 * The top `limit` frames of an error's stack as a fingerprint sees them (see {@link
 * FingerprintFrame}); `node:` frames are skipped. Never throws.
 */
export function fingerprintFrames(error: unknown, limit = DEFAULT_FINGERPRINT_FRAMES): FingerprintFrame[] {
  const frames: FingerprintFrame[] = [];
  try {
    const stack =
      typeof error === 'object' && error !== null ? (error as { stack?: unknown }).stack : undefined;
    if (typeof stack !== 'string') return frames;
    for (const line of stack.split('\n', 200)) {
      if (frames.length >= limit) break;
      const m = FRAME.exec(line);
      if (m === null || !/^\s*at /.test(line)) continue;
      const location = (m[2] ?? m[3] ?? '').trim();
      if (location.startsWith('node:')) continue;
      // `async `, `new `, the `Module.` or `Object.` receiver and `[as alias]` depend on how the
      // function was called, not on what it is.
      const fn =
        (m[2] === undefined ? '' : (m[1] ?? ''))
          .replace(/^(?:async |new )+/, '')
          .replace(/^(?:Module|Object)\./, '')
          .replace(/ \[as [^\]]*\]$/, '') || '<anonymous>';
      const file = location.includes('eval at ') ? 'eval' : normalizeLocation(location);
      frames.push({ fn: fn.slice(0, MAX_NAME_CHARS), file: file.slice(0, 1000) });
    }
  } catch {
    // a fingerprint over the frames read so far
  }
  return frames;
}

const cache = new WeakMap<object, { readonly limit: number; readonly value: string }>();

/**
 * The fingerprint of a thrown value: hex SHA-256 over {@link errorType} and the top `frames`
 * {@link fingerprintFrames} (default {@link DEFAULT_FINGERPRINT_FRAMES}). Cached per error object.
 * Never throws.
 */
export function fingerprint(error: unknown, frames = DEFAULT_FINGERPRINT_FRAMES): string {
  const cacheable = typeof error === 'object' && error !== null;
  if (cacheable) {
    const hit = cache.get(error);
    if (hit !== undefined && hit.limit === frames) return hit.value;
  }
  const lines = [errorType(error), ...fingerprintFrames(error, frames).map((f) => `${f.fn} ${f.file}`)];
  const value = createHash('sha256').update(lines.join('\n')).digest('hex');
  if (cacheable) cache.set(error, { limit: frames, value });
  return value;
}
