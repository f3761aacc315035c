import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import v8 from 'node:v8';
import vm from 'node:vm';

/** Active (ref'ed) timers of this process: for servers running in-process. */
export function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

/** Polls until `check` holds or `withinMs` passes; returns whether it held. */
export async function eventually(check: () => boolean, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(10);
  }
  return check();
}

/**
 * Polls `check` every `everyMs` until it holds; fails naming `what` once `withinMs` has passed.
 * The one wait-for-a-condition of the tests: a check that throws fails the wait at once.
 */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  withinMs = 10_000,
  everyMs = 20,
): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
    await sleep(everyMs);
  }
}

/**
 * Waits `ms` on the wall clock, for a test whose point is what does not happen during it: no message
 * arrives, a write within a debounce is not reported, a stopped timer does not fire, a server sends
 * nothing while it holds a request, a client reads nothing for a while (and the server must cope), a
 * bucket refills because nothing takes from it. Absence has no event to wait on, so a fixed wait is
 * the only way to see it; `what` names the quiet period (for the reader: the wait itself cannot
 * fail). Every other wait in the tests waits on its condition (`until`, `eventually`, `within`, an
 * event), and a client's own pace (a prober's period, a slow client's pauses) says so where it is.
 */
export async function quietFor(ms: number, what: string): Promise<void> {
  void what;
  await sleep(ms);
}

/**
 * Resolves as `promise` does, or rejects naming `what` after `ms`. The timer is cleared either way, so
 * a bound that was not needed does not keep the test file's process alive until it fires.
 */
export function within<T>(promise: Promise<T>, what: string, ms = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** `promise`'s value, or `fallback` once `ms` has passed; the timer is cleared either way. */
export function orAfter<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** A gc function: `global.gc` under --expose-gc, else one obtained by setting the flag at run time. */
export function findGc(): (() => void) | undefined {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (typeof existing === 'function') return existing;
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

/** A TCP port free on 127.0.0.1 right now (for a child process to listen on). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** How a child process ended, with everything it wrote. */
export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Collects a child's output from now on and resolves when it has exited and closed its pipes. */
export function exitOf(child: ChildProcess): Promise<Exit> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
