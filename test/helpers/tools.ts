/**
 * Command-line tools a test runs (curl, jq, promtool): present here, the test goes on; missing, it
 * is skipped locally and fails in CI, whose `.ci/run` installs them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const found = new Map<string, boolean>();

function isOnPath(tool: string): boolean {
  let yes = found.get(tool);
  if (yes === undefined) {
    yes = spawnSync(tool, ['--version'], { encoding: 'utf8', timeout: 10_000 }).status === 0;
    found.set(tool, yes);
  }
  return yes;
}

/** Those of `tools` that do not run here. */
export function missingTools(tools: readonly string[]): string[] {
  return tools.filter((tool) => !isOnPath(tool));
}

/**
 * Whether every one of `tools` runs (`--version` exits 0); when one does not, skips the test with
 * a reason naming `packages` (the Debian packages that hold them), or fails it in CI.
 */
export function needTools(
  t: { skip(message?: string): void },
  tools: readonly string[],
  packages: string,
): boolean {
  const missing = missingTools(tools);
  if (missing.length === 0) return true;
  const why = `${missing.join(' and ')} not found on PATH (${packages}); .ci/run installs ${missing.length === 1 ? 'it' : 'them'}`;
  if (process.env['CI']) assert.fail(`${why}: required in CI`);
  t.skip(why);
  return false;
}
