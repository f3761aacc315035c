/**
 * The link check of a built site: every `href` and `src` of every HTML page that points into the
 * site names a file that exists (a page, an asset) and, with a `#fragment`, an element of that page
 * with that id; every link to a file of this repository on GitHub names a file or folder the
 * repository has. Links to other sites are not followed (the build and its check are offline).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';

export interface LinkCheckOptions {
  /** The built site. */
  readonly outDir: string;
  /** The base path the site was built for, `/echo-chaos/`. */
  readonly base: string;
  /** Links starting with these name repository files: the rest is the path in the repository. */
  readonly repoPrefixes: readonly string[];
  /** The repository, to check those. */
  readonly repoRoot: string;
}

function htmlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...htmlFiles(path));
    else if (name.endsWith('.html')) out.push(path);
  }
  return out;
}

const ids = new Map<string, Set<string>>();
function idsOf(file: string): Set<string> {
  let found = ids.get(file);
  if (found === undefined) {
    const html = readFileSync(file, 'utf8');
    found = new Set([...html.matchAll(/\sid="([^"]*)"/g)].map((m) => m[1]!));
    ids.set(file, found);
  }
  return found;
}

const htmlText = (s: string): string =>
  s
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<');

/** Every broken link of the site, as `page: link (why)`. Empty when every link holds. */
export function brokenLinks(options: LinkCheckOptions): string[] {
  ids.clear();
  const { outDir, base, repoPrefixes, repoRoot } = options;
  const problems: string[] = [];
  const pages = htmlFiles(outDir);
  if (pages.length === 0) return [`${outDir} holds no page`];
  for (const file of pages) {
    const page = relative(outDir, file).split('\\').join('/');
    const html = readFileSync(file, 'utf8');
    // The site path of this page, to resolve relative links the way a browser does.
    const pageUrl = `${base}${page}`;
    for (const [, attr, raw] of html.matchAll(/\s(href|src)="([^"]*)"/g)) {
      const link = htmlText(raw!);
      const report = (why: string): void => {
        problems.push(`${page}: ${attr}="${link}" (${why})`);
      };
      const repo = repoPrefixes.find((prefix) => link.startsWith(prefix));
      if (repo !== undefined) {
        const path = decodeURIComponent(link.slice(repo.length).split('#')[0]!.split('?')[0]!);
        if (path === '' || !existsSync(join(repoRoot, path))) report(`the repository has no ${path}`);
        continue;
      }
      if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('//')) continue;
      const hash = link.indexOf('#');
      const pathPart = (hash === -1 ? link : link.slice(0, hash)).split('?')[0]!;
      const fragment = hash === -1 ? '' : decodeURIComponent(link.slice(hash + 1));
      const target =
        pathPart === '' ? pageUrl : posix.normalize(posix.join(posix.dirname(pageUrl), pathPart));
      const absolute = pathPart.startsWith('/') ? pathPart : target;
      if (!absolute.startsWith(base)) {
        report(`outside the site's base ${base}`);
        continue;
      }
      let targetFile = join(outDir, decodeURIComponent(absolute.slice(base.length)));
      if (absolute.endsWith('/')) targetFile = join(targetFile, 'index.html');
      if (!existsSync(targetFile) || statSync(targetFile).isDirectory()) {
        report('no such file in the built site');
        continue;
      }
      if (fragment !== '' && targetFile.endsWith('.html') && !idsOf(targetFile).has(fragment))
        report(`${relative(outDir, targetFile)} has no id "${fragment}"`);
    }
  }
  return problems;
}
