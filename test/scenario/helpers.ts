import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

/** A fresh directory under the OS temp dir, removed when the test ends. */
export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'echo-chaos-scenario-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Records the calls of a callback and waits, boundedly, for them. */
export class Calls<T> {
  readonly values: T[] = [];
  #waiters: Array<() => void> = [];

  readonly record = (value: T): void => {
    this.values.push(value);
    for (const wake of this.#waiters.splice(0)) wake();
  };

  /** Resolves once at least `count` calls happened; rejects after `timeoutMs`. */
  async until(count: number, timeoutMs = 5000): Promise<T[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.values.length < count) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`expected ${count} call(s) within ${timeoutMs}ms, got ${this.values.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.values;
  }
}
