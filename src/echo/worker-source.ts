/**
 * A worker thread's modules as JavaScript, their types stripped in the thread that starts it.
 *
 * Run from its TypeScript sources (`npm start`), each worker thread would load node's TypeScript
 * stripper again (amaro, about 20 MB of memory a thread) for the few modules it runs. The thread
 * that starts the worker has it loaded already: it strips the worker's modules (the entry and every
 * TypeScript module it imports, followed through their `import` and `export … from`), and the
 * worker's loader hook (`module.registerHooks`, in the worker's own thread) serves them as
 * JavaScript. A module it was not given loads as usual (test/echo/worker-source.test.ts checks that
 * the log worker's are all given). Run from the built JavaScript, there is nothing to strip.
 */
import { readFileSync } from 'node:fs';
import * as nodeModule from 'node:module';

/** What the worker's bootstrap needs: its entry, and the JavaScript of each module by URL. */
export interface WorkerSources {
  readonly entry: string;
  readonly sources: Readonly<Record<string, string>>;
}

/** The specifiers a module's static `import`s and `export … from`s name. */
const IMPORTS = /(?:^|[;\s])(?:import|export)\s*(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]/g;

/** `work`, without node's one-time warning that `stripTypeScriptTypes` is experimental. */
function quietly<T>(work: () => T): T {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (text.startsWith('stripTypeScriptTypes')) return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return work();
  } finally {
    process.emitWarning = emit;
  }
}

/**
 * The JavaScript of `entry` and of the TypeScript modules it imports, directly or not; undefined
 * when `entry` is not TypeScript or this node cannot strip types. `resolve` gives a bare
 * specifier's URL (a package's own export), or undefined to leave it to the worker's loader.
 */
export function workerSources(
  entry: URL,
  resolve: (specifier: string) => string | undefined,
): WorkerSources | undefined {
  if (!entry.pathname.endsWith('.ts') || typeof nodeModule.stripTypeScriptTypes !== 'function')
    return undefined;
  if (typeof nodeModule.registerHooks !== 'function') return undefined;
  return { entry: entry.href, sources: quietly(() => stripAll(entry.href, resolve)) };
}

/** Each TypeScript module `entry` reaches through its imports, by URL, its types stripped. */
function stripAll(entry: string, resolve: (specifier: string) => string | undefined): Record<string, string> {
  const sources: Record<string, string> = {};
  const queue = [entry];
  for (let url = queue.pop(); url !== undefined; url = queue.pop()) {
    if (Object.hasOwn(sources, url) || !url.startsWith('file:') || !url.endsWith('.ts')) continue;
    const js = nodeModule.stripTypeScriptTypes(readFileSync(new URL(url), 'utf8'));
    sources[url] = js;
    for (const match of js.matchAll(IMPORTS)) {
      const specifier = match[1]!;
      if (specifier.startsWith('node:')) continue;
      const target =
        specifier.startsWith('./') || specifier.startsWith('../')
          ? new URL(specifier, url).href
          : resolve(specifier);
      if (target !== undefined) queue.push(target);
    }
  }
  return sources;
}

/**
 * The worker's first code (run with `eval: true`): the loader hook that serves the stripped
 * modules of `workerData.workerSources`, then the entry.
 */
export const WORKER_BOOTSTRAP = `
const { registerHooks } = require('node:module');
const { workerData } = require('node:worker_threads');
const { entry, sources } = workerData.workerSources;
registerHooks({
  load(url, context, nextLoad) {
    if (Object.hasOwn(sources, url)) return { format: 'module', source: sources[url], shortCircuit: true };
    return nextLoad(url, context);
  },
});
import(entry).catch((error) => {
  process.nextTick(() => {
    throw error;
  });
});
`;
