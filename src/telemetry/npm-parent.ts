/**
 * A process started by npm (`npx echo-chaos`, `npm exec`, `npm start`, `npm run operator`) may be
 * left serving when npm is signalled: npm runs a bin through a shell, which dies of the signal npm
 * passes on without passing it further. The service and the operator watch their parent while npm
 * started them, and stop as on SIGTERM once it has gone, rather than serving on with no one to stop
 * them.
 */

/** How often a process started by npm checks that its parent is still there. */
export const PARENT_CHECK_MS = 500;

/**
 * The parent as this module was loaded, early in the process's start: a parent that dies while the
 * process is still starting (before it watches) is noticed too.
 */
const PARENT_AT_START = process.ppid;

/**
 * Calls `onGone(parentPid)` once, when the parent this process started with has gone, if npm started it
 * (`npm_command` in `env`); does nothing otherwise. The check never keeps the process alive.
 * @returns stops watching.
 */
export function watchNpmParent(
  env: Readonly<Record<string, string | undefined>>,
  onGone: (parent: number) => void,
  everyMs = PARENT_CHECK_MS,
): () => void {
  if (env['npm_command'] === undefined) return () => {};
  const parent = PARENT_AT_START;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    onGone(parent);
  }, everyMs);
  watch.unref();
  return () => clearInterval(watch);
}
