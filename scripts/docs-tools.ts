/**
 * The docs site's tools (VitePress, vitepress-plugin-mermaid, mermaid: about 300 MB and 287
 * packages) are not in the repository's `npm ci`: they are a package of their own, `docs/package.json`
 * with its own `docs/package-lock.json` (not a workspace), installed into `docs/node_modules` when
 * first needed (docs/adr/0047-docs-tools-on-demand.md). `npm run docs:build` (`docs:dev`,
 * `docs:preview`) runs this file, which runs `npm ci --prefix docs` when `docs/node_modules` is missing
 * or was installed from another lock (a stamp in it holds the lock's hash), then VitePress from there.
 * `npm run typecheck` runs `install` first (docs/.vitepress/config.ts imports VitePress's types), and
 * test/helpers/docs-build.ts calls `ensureDocsTools` before it builds the site.
 *
 *   node scripts/docs-tools.ts install                    the tools if missing or stale (npm run docs:tools)
 *   node scripts/docs-tools.ts build|dev|preview [args]   the tools, then `vitepress <command> docs [args]`
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const DOCS = join(ROOT, 'docs');
const LOCK = join(DOCS, 'package-lock.json');
const MODULES = join(DOCS, 'node_modules');
/** The hash of the lock `docs/node_modules` was installed from; it goes when the folder goes. */
const STAMP = join(MODULES, '.echo-chaos-docs-lock.sha256');
/** VitePress's command line, inside the docs tools. */
export const VITEPRESS_BIN = join(MODULES, 'vitepress', 'bin', 'vitepress.js');

function lockHash(): string {
  return createHash('sha256').update(readFileSync(LOCK)).digest('hex');
}

/** Why the docs tools need installing ('missing', 'stale'), or undefined when they are current. */
export function docsToolsState(): 'missing' | 'stale' | undefined {
  if (!existsSync(VITEPRESS_BIN) || !existsSync(STAMP)) return 'missing';
  return readFileSync(STAMP, 'utf8').trim() === lockHash() ? undefined : 'stale';
}

/**
 * Installs the docs tools when missing or stale (`npm ci --prefix docs`: the machine's npm, its
 * configuration and cache, the registry when the cache lacks a package) and returns VitePress's
 * command line. `quiet` keeps npm's output, which goes into the error when the install fails;
 * otherwise it is shown as it comes. Throws saying why when the install fails.
 */
export function ensureDocsTools(options: { quiet?: boolean } = {}): string {
  const state = docsToolsState();
  if (state === undefined) return VITEPRESS_BIN;
  if (!options.quiet) {
    console.error(
      `docs tools ${state === 'missing' ? 'not installed' : 'installed from another docs/package-lock.json'}: npm ci --prefix docs`,
    );
  }
  try {
    execFileSync('npm', ['ci', '--prefix', DOCS, '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: ROOT,
      stdio: options.quiet ? 'pipe' : 'inherit',
      timeout: 600_000,
    });
  } catch (err) {
    // npm's first lines say why (its stack trace and log path follow them).
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim().split('\n').slice(0, 6).join(' | ');
    throw new Error(`cannot install the docs tools (npm ci --prefix docs): ${stderr || String(err)}`);
  }
  writeFileSync(STAMP, `${lockHash()}\n`);
  return VITEPRESS_BIN;
}

/** `vitepress <command> docs [args]` from the docs tools, signals passed on; exits as it does. */
function runVitepress(command: string, args: readonly string[]): void {
  const bin = ensureDocsTools();
  const child = spawn(process.execPath, [bin, command, 'docs', ...args], { cwd: ROOT, stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    // Ended by a signal: end the same way, without the handlers above.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [command, ...args] = process.argv.slice(2);
  try {
    if (command === 'install') ensureDocsTools();
    else if (command === 'build' || command === 'dev' || command === 'preview') runVitepress(command, args);
    else {
      console.error('usage: node scripts/docs-tools.ts install | build | dev | preview [vitepress options]');
      process.exit(2);
    }
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
