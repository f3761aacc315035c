/**
 * Where the tools fetched on first use are kept (helm for the chart tests, api-extractor for the API
 * report; docs/adr/0047-docs-tools-on-demand.md): outside the repository, so every clone shares them.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/** The first writable of `$XDG_CACHE_HOME/echo-chaos`, `~/.cache/echo-chaos`, the temporary directory's. */
export function cacheRoot(): string {
  const xdg = process.env['XDG_CACHE_HOME'];
  const candidates = [
    ...(xdg ? [join(xdg, 'echo-chaos')] : []),
    join(homedir(), '.cache', 'echo-chaos'),
    join(tmpdir(), 'echo-chaos-cache'),
  ];
  for (const dir of candidates) {
    try {
      mkdirSync(dir, { recursive: true });
      // A directory that exists but cannot be written is no cache: try making a scratch entry.
      rmSync(mkdtempSync(join(dir, 'probe-')), { recursive: true });
      return dir;
    } catch {
      // next candidate
    }
  }
  throw new Error(`no writable cache directory among ${candidates.join(', ')}`);
}
