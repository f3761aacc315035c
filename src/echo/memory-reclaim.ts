/**
 * Gives back the memory a burst of traffic leaves behind (docs/adr/0013-memory-after-bursts.md).
 *
 * Under load V8 grows its heap; once the load is over its garbage collections free the pages, but
 * it keeps them in a pool (`pooled: 66 MB` in `--trace-gc`) and only a memory-reducing collection
 * returns them to the operating system. V8's own memory reducer never starts one here: its timer
 * keeps judging the allocation rate "high" long after the last request (`--trace-memory-reducer`),
 * so the RSS stays at the burst's high-water mark. After a million requests that was 320 MB against
 * 131 MB idle; one memory-reducing collection takes it back to about 125 MB.
 *
 * So the service asks for that collection itself, once, when it has been idle (no request for a
 * whole `ECHO_IDLE_RECLAIM`) after traffic that grew its RSS by at least {@link GROWTH_BYTES}.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How much the RSS must have grown since the last reclaim (or startup) for an idle spell to act. */
export const GROWTH_BYTES = 16 * 1024 * 1024;

/** What the reclaimer reads and does, injected so the decision is testable without a heap. */
export interface ReclaimDeps {
  /** A counter that moves with every request (the service's request count). */
  readonly requests: () => number;
  /** The process's resident set size, in bytes. */
  readonly rssBytes: () => number;
  /** A full, memory-reducing garbage collection that returns free pages to the operating system. */
  readonly collect: () => void;
  /** Milliseconds, monotonic: for the collection's duration. */
  readonly now: () => number;
}

/** One reclaim: the RSS before and after, and how long the collection held the event loop. */
export interface Reclaimed {
  readonly rssBeforeBytes: number;
  readonly rssAfterBytes: number;
  readonly gcMs: number;
}

/**
 * The decision, one `tick()` per interval: a tick that sees the request count unchanged since the
 * previous tick is idle; an idle tick after traffic, with the RSS at least {@link GROWTH_BYTES}
 * above the level the last reclaim (or startup) left, collects. So a quiet service never collects,
 * a busy one never does while busy, and one burst costs at most one collection.
 */
export class IdleReclaimer {
  readonly #deps: ReclaimDeps;
  #lastCount: number;
  #trafficSinceReclaim = false;
  #floorBytes: number;

  constructor(deps: ReclaimDeps) {
    this.#deps = deps;
    this.#lastCount = deps.requests();
    this.#floorBytes = deps.rssBytes();
  }

  tick(): Reclaimed | undefined {
    const count = this.#deps.requests();
    if (count !== this.#lastCount) {
      this.#lastCount = count;
      this.#trafficSinceReclaim = true;
      return undefined;
    }
    if (!this.#trafficSinceReclaim) return undefined;
    const rssBeforeBytes = this.#deps.rssBytes();
    if (rssBeforeBytes < this.#floorBytes + GROWTH_BYTES) {
      // Traffic that did not grow the RSS: nothing to give back, and nothing to wait for either.
      this.#trafficSinceReclaim = false;
      this.#floorBytes = Math.min(this.#floorBytes, rssBeforeBytes);
      return undefined;
    }
    const started = this.#deps.now();
    this.#deps.collect();
    const gcMs = this.#deps.now() - started;
    const rssAfterBytes = this.#deps.rssBytes();
    this.#trafficSinceReclaim = false;
    this.#floorBytes = rssAfterBytes;
    return { rssBeforeBytes, rssAfterBytes, gcMs };
  }
}

let memoryReducingGc: (() => void) | undefined;

/**
 * V8's memory-reducing full collection (the `last-resort` flavour of its `gc` extension, which
 * also releases the pooled pages). Node has no API for it; the extension is switched on and taken
 * from a fresh context the first time it is needed, never at startup.
 */
export function collectAndRelease(): void {
  if (memoryReducingGc === undefined) {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (options: object) => unknown;
    memoryReducingGc = () => void gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  }
  memoryReducingGc();
}

/**
 * Ticks an {@link IdleReclaimer} every `intervalMs` on an unreferenced timer (it never keeps the
 * process alive) and hands each reclaim to `onReclaim`. `stop()` ends it.
 */
export function startIdleReclaim(
  intervalMs: number,
  requests: () => number,
  onReclaim: (reclaimed: Reclaimed) => void,
): { stop(): void } {
  const reclaimer = new IdleReclaimer({
    requests,
    rssBytes: () => process.memoryUsage.rss(),
    collect: collectAndRelease,
    now: () => performance.now(),
  });
  const timer = setInterval(() => {
    const reclaimed = reclaimer.tick();
    if (reclaimed !== undefined) onReclaim(reclaimed);
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
