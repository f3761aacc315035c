/**
 * The docs site's one source of truth: each text is written once. The reference (control headers,
 * configuration, errors, obs's features, ...) is written in the pages of `docs/`; the READMEs keep the
 * first hour (what it is, run it, the tour, Kubernetes in five commands, where to read on), and a page
 * includes a section of a README, or of another page (a few rows of a table), with
 * `<!--@section: README.md#run-it-->` instead of copying its text; the build expands it
 * (docs/adr/0039-readme-path-docs-reference.md). Links are rewritten for the site: to the page that
 * includes their target when one does, a page's GitHub anchor to the one VitePress gives the heading,
 * a link to a page on GitHub (the obs README's, which npm shows too) to the page itself, else to the
 * file on GitHub. VitePress's own `<!--@include-->` takes only line ranges and `#region` markers,
 * which would tie the pages to line numbers or put markers into every README; a heading is what a
 * README already has (docs/adr/0021-docs-site.md).
 *
 * Directive: `<!--@section: FILE[#anchor] [heading] [intro] [rows=A,B]-->`, FILE relative to the
 * repository root, anchor as GitHub spells a heading's link. Without an anchor, the whole file less
 * its title. `heading` keeps the section's own heading (as `##`), `intro` stops at its first
 * subheading, `rows=` keeps only the header and the rows of its first table whose first cell names
 * one of A, B. Headings are shifted so the section's children are `##` (`###` with `heading`).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// Not import.meta.dirname: VitePress bundles its config (and this file) with esbuild, which keeps
// import.meta.url right and nothing else.
export const ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
export const DOCS_DIR = join(ROOT, 'docs');
/** Where a repository file that is not on the site is linked to. */
export const REPO_URL = 'https://github.com/echo-chaos/echo-chaos';
export const REPO_BLOB = `${REPO_URL}/blob/main/`;
export const REPO_TREE = `${REPO_URL}/tree/main/`;

/** A directive is a line of its own, outside code blocks: elsewhere it is text (this comment, an ADR). */
const DIRECTIVE_LINE = /^\s*<!--\s*@(section|list):\s*(.*?)\s*-->\s*$/;

/** The directives of a page: kind, argument text and line. */
function directivesOf(text: string): { kind: string; text: string; line: number }[] {
  const lines = text.split('\n');
  const inFence = fenced(lines);
  return lines.flatMap((line, at) => {
    const m = inFence[at] ? null : DIRECTIVE_LINE.exec(line);
    return m ? [{ kind: m[1]!, text: m[2]!, line: at }] : [];
  });
}

// --- Slugs ------------------------------------------------------------------------------------

/** A heading's text as rendered: inline code, emphasis and link syntax gone. */
export function headingText(raw: string): string {
  return raw
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__)(.*?)\1/g, '$2')
    .replace(/(^|\W)[*_](\S.*?)[*_](?=\W|$)/g, '$1$2')
    .trim();
}

/** The anchor GitHub gives a heading (how the READMEs link to each other). */
export function githubSlug(raw: string): string {
  return headingText(raw)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchor VitePress gives a heading (its slugify over the heading's rendered text). */
export function siteSlug(raw: string): string {
  return (
    headingText(raw)
      .normalize('NFKD')
      .replace(/[\u0300-\u036F]/g, '')
      // VitePress also drops control characters; a heading has none.
      .replace(/[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g, '-')
      .replace(/-{2,}/g, '-')
      .replace(/^-+|-+$/g, '')
      .replace(/^(\d)/, '_$1')
      .toLowerCase()
  );
}

// --- Headings and sections --------------------------------------------------------------------

export interface Heading {
  /** 0-based line number. */
  readonly line: number;
  readonly level: number;
  readonly raw: string;
}

const FENCE = /^\s*(```+|~~~+)/;

/** Whether each line is inside a fenced code block (fence lines included). */
function fenced(lines: readonly string[]): boolean[] {
  let open: string | undefined;
  return lines.map((line) => {
    const fence = FENCE.exec(line)?.[1];
    if (open === undefined) {
      if (fence !== undefined) open = fence[0]!.repeat(fence.length);
      return fence !== undefined;
    }
    if (fence?.startsWith(open) && line.trim() === fence) open = undefined;
    return true;
  });
}

/** The ATX headings of a markdown text, outside code blocks. */
export function headingsOf(markdown: string): Heading[] {
  const lines = markdown.split('\n');
  const inFence = fenced(lines);
  const out: Heading[] = [];
  lines.forEach((line, at) => {
    const m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (m && !inFence[at]) out.push({ line: at, level: m[1]!.length, raw: m[2]! });
  });
  return out;
}

export interface SectionRequest {
  /** Repository-relative path of the file. */
  readonly file: string;
  /** GitHub anchor of the heading; empty for the whole file. */
  readonly anchor: string;
  readonly keepHeading: boolean;
  readonly intro: boolean;
  readonly rows: readonly string[] | undefined;
}

/** Parses the text of one directive. */
export function parseDirective(text: string): SectionRequest {
  const [target = '', ...flags] = text.trim().split(/\s+/);
  const hash = target.indexOf('#');
  const request: SectionRequest = {
    file: hash === -1 ? target : target.slice(0, hash),
    anchor: hash === -1 ? '' : target.slice(hash + 1),
    keepHeading: flags.includes('heading'),
    intro: flags.includes('intro'),
    rows: flags
      .find((f) => f.startsWith('rows='))
      ?.slice(5)
      .split(','),
  };
  const unknown = flags.filter((f) => !['heading', 'intro'].includes(f) && !f.startsWith('rows='));
  if (request.file === '' || unknown.length > 0)
    throw new Error(`@section: cannot read "${text}" (want FILE[#anchor] [heading] [intro] [rows=A,B])`);
  return request;
}

/** A section of a file: its lines, the headings in it, and the level shift applied to them. */
export interface Section {
  readonly lines: string[];
  /** The headings kept, by their GitHub anchor in the source and their raw text. */
  readonly headings: readonly Heading[];
  /** The section's own heading (undefined for a whole file). */
  readonly top: Heading | undefined;
  /** Levels to subtract from a kept heading. */
  readonly shift: number;
}

function readSource(file: string): string {
  const path = join(ROOT, file);
  if (!existsSync(path)) throw new Error(`@section: ${file} does not exist`);
  return readFileSync(path, 'utf8');
}

/** Cuts the requested section out of its file; throws, naming it, when the heading is not there. */
export function sectionOf(request: SectionRequest, source = readSource(request.file)): Section {
  const lines = source.split('\n');
  const headings = headingsOf(source);
  let start: number;
  let end: number;
  let top: Heading | undefined;
  if (request.anchor === '') {
    top = undefined;
    const title = headings[0]?.level === 1 ? headings[0] : undefined;
    start = title === undefined ? 0 : title.line + 1;
    end = lines.length;
  } else {
    top = headings.find((h) => githubSlug(h.raw) === request.anchor);
    if (top === undefined)
      throw new Error(
        `@section: ${request.file} has no heading #${request.anchor} (has ${headings.map((h) => `#${githubSlug(h.raw)}`).join(', ')})`,
      );
    const level = top.level;
    start = top.line + 1;
    end = headings.find((h) => h.line > top!.line && h.level <= level)?.line ?? lines.length;
  }
  if (request.intro) end = headings.find((h) => h.line >= start && h.line < end)?.line ?? end;
  const topLevel = top?.level ?? 1;
  const shift = request.keepHeading ? topLevel - 2 : topLevel - 1;
  let kept = lines.slice(start, end);
  if (request.rows !== undefined) kept = tableRows(kept, request.rows, request);
  const inside = headingsOf(kept.join('\n')).map((h) => ({ ...h, line: h.line + start }));
  const shifted = shiftHeadings(kept, shift);
  if (request.keepHeading && top !== undefined) shifted.unshift(`## ${top.raw}`, '');
  return {
    lines: shifted,
    headings: request.keepHeading && top !== undefined ? [top, ...inside] : inside,
    top,
    shift,
  };
}

function shiftHeadings(lines: readonly string[], shift: number): string[] {
  const inFence = fenced(lines);
  return lines.map((line, at) => {
    const m = /^(#{1,6})(\s.*)$/.exec(line);
    if (!m || inFence[at] || shift === 0) return line;
    return `${'#'.repeat(Math.min(6, Math.max(2, m[1]!.length - shift)))}${m[2]}`;
  });
}

/** Whether a table row's first cell names `name`: a code span equal to it, ending in ` name` (a
 * route after its method), or, for a name ending in `.`, starting with it (every key of a prefix). */
function rowNames(row: string, name: string): boolean {
  const cell = row.split('|')[1] ?? '';
  return [...cell.matchAll(/`([^`]+)`/g)].some(
    ([, code]) =>
      code === name || code!.endsWith(` ${name}`) || (name.endsWith('.') && code!.startsWith(name)),
  );
}

/** The header, separator and the rows naming one of `names` of the first table in these lines. */
function tableRows(lines: readonly string[], names: readonly string[], request: SectionRequest): string[] {
  const first = lines.findIndex((l) => l.startsWith('|'));
  if (first === -1) throw new Error(`@section: ${request.file}#${request.anchor} has no table`);
  let last = first;
  while (last < lines.length && lines[last]!.startsWith('|')) last++;
  const body = lines.slice(first + 2, last);
  for (const name of names) {
    if (!body.some((row) => rowNames(row, name)))
      throw new Error(`@section: the table of ${request.file}#${request.anchor} has no row \`${name}\``);
  }
  return [lines[first]!, lines[first + 1]!, ...body.filter((row) => names.some((n) => rowNames(row, n)))];
}

// --- The index: which page shows which heading ------------------------------------------------

/** Where a heading of a source file is on the site: a page (docs-relative) and its anchor there. */
export interface SiteTarget {
  readonly page: string;
  readonly anchor: string;
}

/** Every page of the site, docs-relative, `.vitepress` and the like left out. */
export function sitePages(dir = DOCS_DIR): string[] {
  const out: string[] = [];
  const walk = (at: string): void => {
    for (const name of readdirSync(at).sort()) {
      if (name.startsWith('.') || name === 'node_modules' || name === 'public') continue;
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.md')) out.push(relative(dir, path).split('\\').join('/'));
    }
  };
  walk(dir);
  return out;
}

/**
 * The reference and the path to it, each text with its repository path: README.md, then every page of
 * docs/ but the ADRs (whose words are those of their day). The tests that hold the documentation to
 * the code (every variable it names is read, every scenario it posts is valid, ...) read these.
 */
export function readerTexts(): { file: string; text: string }[] {
  const pages = sitePages().filter((page) => !page.startsWith('adr/'));
  return [
    { file: 'README.md', text: readFileSync(join(ROOT, 'README.md'), 'utf8') },
    ...pages.map((page) => ({ file: `docs/${page}`, text: readFileSync(join(DOCS_DIR, page), 'utf8') })),
  ];
}

export type SiteIndex = Map<string, SiteTarget>;
const key = (file: string, anchor: string): string => `${file}#${anchor}`;

/** The directives of every page, resolved: `file#anchor` (GitHub's) to where the site shows it. */
export function buildIndex(dir = DOCS_DIR): SiteIndex {
  const index: SiteIndex = new Map();
  for (const page of sitePages(dir)) {
    const text = readFileSync(join(dir, page), 'utf8');
    for (const directive of directivesOf(text).filter((d) => d.kind === 'section')) {
      const request = parseDirective(directive.text);
      // A few rows of a table show no section; an intro shows its section's own text.
      if (request.rows !== undefined) continue;
      const section = sectionOf(request);
      const set = (anchor: string, target: SiteTarget): void => {
        if (!index.has(key(request.file, anchor))) index.set(key(request.file, anchor), target);
      };
      if (request.anchor === '') set('', { page, anchor: '' });
      else if (!request.keepHeading) set(request.anchor, { page, anchor: '' });
      for (const h of section.headings) set(githubSlug(h.raw), { page, anchor: siteSlug(h.raw) });
    }
  }
  return index;
}

// --- Expanding a page -------------------------------------------------------------------------

/** Rewrites the markdown links of lines that came from `origin` (repository-relative) for `page`. */
export function rewriteLinks(
  lines: readonly string[],
  origin: string,
  page: string,
  index: SiteIndex,
): string[] {
  const inFence = fenced(lines);
  return lines.map((line, at) => {
    if (inFence[at]) return line;
    // Only outside inline code: split on code spans, rewrite the even parts.
    return line
      .split(/(`+[^`]*`+)/)
      .map((part, i) =>
        i % 2 === 1
          ? part
          : escapeForVue(part).replace(/\]\(([^)\s]+)(\s+"[^"]*")?\)/g, (_, target: string, title = '') => {
              return `](${siteLink(target, origin, page, index)}${title})`;
            }),
      )
      .join('');
  });
}

/** HTML a README may hold on purpose; any other `<word>` is text (`<median>`, `<owner>`). */
const HTML_TAGS = new Set([
  'a',
  'b',
  'br',
  'code',
  'details',
  'em',
  'i',
  'img',
  'kbd',
  'p',
  'span',
  'strong',
  'sub',
  'summary',
  'sup',
]);

/**
 * Text outside code as Vue compiles it: a page is a Vue template, where `<median>` is an element
 * left open (the build fails) and `{{` starts an expression. GitHub shows both as text, or hides
 * the first: here they are text.
 */
function escapeForVue(text: string): string {
  return text
    .replace(/<(\/?)([A-Za-z][\w-]*)/g, (m, slash: string, name: string) =>
      HTML_TAGS.has(name.toLowerCase()) ? m : `&lt;${slash}${name}`,
    )
    .replace(/\{\{/g, '&#123;&#123;');
}

const IMAGE = /\.(?:png|jpe?g|gif|svg|webp|avif)$/i;

/** Where a link written in `origin` to `target` goes on the site, seen from `page`. */
export function siteLink(target: string, origin: string, page: string, index: SiteIndex): string {
  const onGitHub = target.startsWith(REPO_BLOB) ? target.slice(REPO_BLOB.length) : undefined;
  if (onGitHub !== undefined && /^docs\/[^#]*\.md(#|$)/.test(onGitHub)) {
    const [path = '', anchor] = onGitHub.split('#');
    if (existsSync(join(ROOT, path))) {
      const relativePath = posix.relative(posix.dirname(origin), path);
      return siteLink(anchor === undefined ? relativePath : `${relativePath}#${anchor}`, origin, page, index);
    }
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('/')) return target;
  const hash = target.indexOf('#');
  const path = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? '' : target.slice(hash + 1);
  const file = path === '' ? origin : posix.normalize(posix.join(posix.dirname(origin), path));
  const pageDir = posix.dirname(`docs/${page}`);
  const to = (docsPage: string, siteAnchor: string): string =>
    `${posix.relative(pageDir, `docs/${docsPage}`)}${siteAnchor === '' ? '' : `#${siteAnchor}`}`;
  const shown = index.get(key(file, anchor));
  if (shown !== undefined) return to(shown.page, shown.anchor);
  if (file.startsWith('docs/') && file.endsWith('.md') && existsSync(join(ROOT, file)))
    return to(file.slice('docs/'.length), pageAnchor(file, anchor));
  if (file.startsWith('..')) throw new Error(`a link in ${origin} leaves the repository: ${target}`);
  // A picture is bundled from where it is (Vite copies it into the site's assets), so a README's
  // picture shows on the site too; a GitHub page of it would not.
  if (IMAGE.test(file) && existsSync(join(ROOT, file))) return posix.relative(pageDir, file);
  const isDir = existsSync(join(ROOT, file)) && statSync(join(ROOT, file)).isDirectory();
  return `${isDir ? REPO_TREE : REPO_BLOB}${file}${anchor === '' ? '' : `#${anchor}`}`;
}

/**
 * The anchor VitePress gives the heading of a page that GitHub calls `anchor` (the pages link to each
 * other as GitHub does, so that they work there too); an anchor no heading of the page has (an HTML
 * `id`, a heading a directive brings) is left as it is.
 */
function pageAnchor(file: string, anchor: string): string {
  if (anchor === '') return anchor;
  const heading = headingsOf(readFileSync(join(ROOT, file), 'utf8')).find(
    (h) => githubSlug(h.raw) === anchor,
  );
  return heading === undefined ? anchor : siteSlug(heading.raw);
}

/** A page's markdown with every directive expanded and every link made a link of the site. */
export function expandPage(page: string, text: string, index: SiteIndex): string {
  const lines = rewriteLinks(text.split('\n'), `docs/${page}`, page, index);
  for (const directive of directivesOf(text).reverse()) {
    let expanded: string;
    if (directive.kind === 'list') expanded = listOf(directive.text, page);
    else {
      const request = parseDirective(directive.text);
      expanded = rewriteLinks(sectionOf(request).lines, request.file, page, index).join('\n').trim();
    }
    lines.splice(directive.line, 1, expanded);
  }
  return lines.join('\n');
}

/** `<!--@list: docs/adr-->`: a bullet per page of a docs folder, its title linked. */
function listOf(dir: string, page: string): string {
  if (!dir.startsWith('docs/')) throw new Error(`@list: ${dir} is not a folder of docs/`);
  const pages = sitePages(join(ROOT, dir));
  if (pages.length === 0) throw new Error(`@list: ${dir} has no pages`);
  return pages
    .map((file) => {
      const title = headingsOf(readFileSync(join(ROOT, dir, file), 'utf8'))[0]?.raw ?? file;
      return `- [${headingText(title)}](${posix.relative(posix.dirname(`docs/${page}`), `${dir}/${file}`)})`;
    })
    .join('\n');
}

/** A folder's pages with their titles, for the sidebar. */
export function titledPages(dir: string): { file: string; title: string }[] {
  return sitePages(join(ROOT, dir)).map((file) => ({
    file,
    title: headingText(headingsOf(readFileSync(join(ROOT, dir, file), 'utf8'))[0]?.raw ?? file),
  }));
}

/** The files a page's directives read (so the dev server reloads the page when one changes). */
export function sourcesOf(text: string): string[] {
  return directivesOf(text)
    .filter((d) => d.kind === 'section')
    .map((d) => join(ROOT, parseDirective(d.text).file));
}

/**
 * The Vite plugin that expands the directives before VitePress reads a page (enforce: pre). Typed
 * structurally: `vite` is VitePress's dependency, not ours. The index is built once per build, and
 * again after a file changes under the dev server.
 */
export function sectionsPlugin(docsDir = DOCS_DIR): {
  name: string;
  enforce: 'pre';
  transform: (this: { addWatchFile(id: string): void }, code: string, id: string) => string | undefined;
  handleHotUpdate: () => void;
} {
  let index: SiteIndex | undefined;
  return {
    name: 'echo-chaos-sections',
    enforce: 'pre',
    transform(code, id) {
      if (!id.endsWith('.md') || !id.startsWith(docsDir)) return undefined;
      const page = relative(docsDir, id).split('\\').join('/');
      for (const source of sourcesOf(code)) this.addWatchFile(source);
      index ??= buildIndex(docsDir);
      return expandPage(page, code, index);
    },
    handleHotUpdate() {
      index = undefined;
    },
  };
}

let searchIndex: SiteIndex | undefined;
/** For VitePress's local search, which reads the page files itself: the same expansion. */
export function expandForSearch(docsDir: string, file: string, text: string): string {
  searchIndex ??= buildIndex(docsDir);
  return expandPage(relative(docsDir, file).split('\\').join('/'), text, searchIndex);
}
