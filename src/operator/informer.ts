/**
 * client-node's informer, kept alive: it stops for good when its watch connection drops (it only
 * reconnects by itself after a clean end or a 410), so every `error` restarts it after an
 * exponential backoff. Its watches ask for bookmarks. Callbacks only report which object changed.
 */
import {
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  makeInformer,
  type ObjectCache,
} from '@kubernetes/client-node';

/** What an informer tells: which object changed, and when its watch had to be restarted. */
export interface InformerHandlers<T extends KubernetesObject> {
  readonly onEvent: (type: 'add' | 'update' | 'delete', obj: T) => void;
  readonly onRestart?: (error: unknown, delayMs: number) => void;
}

export interface ResilientInformerOptions<T extends KubernetesObject> extends Partial<InformerHandlers<T>> {
  readonly kc: KubeConfig;
  readonly path: string;
  readonly list: () => Promise<KubernetesListObject<T>>;
  /** Trims an arriving object in place to what is read of it (strip.ts), before `onEvent`. */
  readonly strip?: (obj: T) => void;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
}

export class ResilientInformer<T extends KubernetesObject> {
  readonly #informer: Informer<T> & ObjectCache<T>;
  readonly #options: ResilientInformerOptions<T>;
  #handlers: Partial<InformerHandlers<T>>;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #synced = false;

  constructor(options: ResilientInformerOptions<T>) {
    this.#options = options;
    this.#handlers = options;
    // client-node asks for no bookmarks; the path carries the query, which its watch keeps. With
    // bookmarks the resourceVersion moves on while the resource is quiet, so a watch that drops
    // resumes from a recent version instead of one compaction may have removed (410, a full list).
    this.#informer = makeInformer(options.kc, `${options.path}?allowWatchBookmarks=true`, options.list);
    for (const type of ['add', 'update', 'delete'] as const) {
      this.#informer.on(type, (obj) => {
        this.#failures = 0;
        if (type !== 'delete') options.strip?.(obj);
        this.#handlers.onEvent?.(type, obj);
      });
    }
    this.#informer.on('error', (error) => this.#restart(error));
  }

  /** Sets what the informer tells of its events (before {@link start}: events before it are lost). */
  handle(handlers: InformerHandlers<T>): void {
    this.#handlers = handlers;
  }

  /** True once a first list has filled the cache. */
  get synced(): boolean {
    return this.#synced;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.#informer.start();
    if (this.#timer === undefined) this.#synced = true;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#informer.stop();
  }

  list(namespace?: string): readonly T[] {
    return this.#informer.list(namespace);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.#informer.get(name, namespace);
  }

  #restart(error: unknown): void {
    if (this.#stopped || this.#timer !== undefined) return;
    const base = this.#options.baseDelayMs ?? 100;
    const delayMs = Math.min(base * 2 ** this.#failures, this.#options.maxDelayMs ?? 30_000);
    this.#failures++;
    this.#handlers.onRestart?.(error, delayMs);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#stopped) return;
      this.#informer.start().then(
        () => {
          if (this.#timer === undefined) this.#synced = true;
        },
        (err: unknown) => this.#restart(err),
      );
    }, delayMs);
  }
}
