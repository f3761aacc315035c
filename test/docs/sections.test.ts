/**
 * scripts/docs-site.ts: the `<!--@section-->` directive of the docs pages (cutting a README section
 * by its heading, shifting its headings, picking table rows) and the links of what it includes,
 * rewritten for the site. Pure functions over given text; the build itself is test/docs/site.integration.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  expandPage,
  githubSlug,
  headingsOf,
  parseDirective,
  REPO_BLOB,
  REPO_TREE,
  type SiteIndex,
  sectionOf,
  siteLink,
  siteSlug,
} from '../../scripts/docs-site.ts';

const README = [
  '# tool',
  '',
  'What it is.',
  '',
  '## Control headers',
  '',
  '| Header | Effect |',
  '|---|---|',
  '| `X-Echo-Delay` | fixed delay |',
  '| `X-Echo-Status` | response status |',
  '| `X-Echo-Chaos` | random failure |',
  '',
  'A header beats its variable; see [Security](#security) and [ADR 5](docs/adr/0005-releases.md).',
  '',
  '### Distributions and seeds',
  '',
  '```sh',
  '# not a heading: a shell comment',
  '```',
  '',
  '#### Fine print',
  '',
  'Lists.',
  '',
  '## Security',
  '',
  'Open by default.',
].join('\n');

const request = (text: string) => parseDirective(text);

test('docs sections – slugs as GitHub and VitePress make them', () => {
  assert.equal(githubSlug('Request context (`obs.context`)'), 'request-context-obscontext');
  assert.equal(siteSlug('Request context (`obs.context`)'), 'request-context-obs-context');
  assert.equal(
    githubSlug('Fault telemetry: was the fault applied?'),
    'fault-telemetry-was-the-fault-applied',
  );
  assert.equal(siteSlug('Fault telemetry: was the fault applied?'), 'fault-telemetry-was-the-fault-applied');
  assert.equal(githubSlug('Database N+1 and slow queries (`obs.db`)'), 'database-n1-and-slow-queries-obsdb');
  assert.equal(siteSlug('HTTP/2 (h2c, prior knowledge)'), 'http-2-h2c-prior-knowledge');
  assert.equal(siteSlug('1. Run TypeScript'), '_1-run-typescript');
  assert.equal(githubSlug('[The operator](src/operator/README.md) tests'), 'the-operator-tests');
});

test('docs sections – headings outside code blocks only', () => {
  assert.deepEqual(
    headingsOf(README).map((h) => `${h.level} ${h.raw}`),
    ['1 tool', '2 Control headers', '3 Distributions and seeds', '4 Fine print', '2 Security'],
  );
});

test('docs sections – a section: its body, its subsections shifted up, up to the next sibling', () => {
  const section = sectionOf(request('README.md#control-headers'), README);
  const text = section.lines.join('\n');
  assert.match(text, /^\| Header \| Effect \|/m);
  assert.match(text, /^## Distributions and seeds$/m, '### under ## becomes ##');
  assert.match(text, /^### Fine print$/m);
  assert.match(text, /^# not a heading: a shell comment$/m, 'a code block is left alone');
  assert.doesNotMatch(text, /^## Control headers|^## Security|Open by default/m);
  assert.deepEqual(
    section.headings.map((h) => h.raw),
    ['Distributions and seeds', 'Fine print'],
  );
});

test('docs sections – heading, intro, rows and the whole file', () => {
  const kept = sectionOf(request('README.md#distributions-and-seeds heading'), README).lines.join('\n');
  assert.match(kept, /^## Distributions and seeds\n/);
  assert.match(kept, /^### Fine print$/m);
  const intro = sectionOf(request('README.md#control-headers intro'), README).lines.join('\n');
  assert.match(intro, /A header beats/);
  assert.doesNotMatch(intro, /Distributions/);
  const rows = sectionOf(request('README.md#control-headers rows=X-Echo-Chaos,X-Echo-Delay'), README).lines;
  assert.deepEqual(rows, [
    '| Header | Effect |',
    '|---|---|',
    '| `X-Echo-Delay` | fixed delay |',
    '| `X-Echo-Chaos` | random failure |',
  ]);
  const whole = sectionOf(request('README.md'), README).lines.join('\n');
  assert.match(whole, /^What it is\./m);
  assert.doesNotMatch(whole, /^# tool/m, "the title is the page's own");
  assert.match(whole, /^## Security$/m);
});

test('docs sections – a heading, a row or a directive that is not there fails the build, naming it', () => {
  assert.throws(
    () => sectionOf(request('README.md#gone'), README),
    /README\.md has no heading #gone \(has .*#security/,
  );
  assert.throws(
    () => sectionOf(request('README.md#control-headers rows=X-Echo-Nope'), README),
    /has no row `X-Echo-Nope`/,
  );
  assert.throws(() => sectionOf(request('README.md#security rows=X'), README), /has no table/);
  assert.throws(() => parseDirective('README.md#security shout'), /cannot read/);
  assert.throws(() => sectionOf(request('no/such/file.md')), /no\/such\/file\.md does not exist/);
});

test('docs sections – links go to the page that shows their target, else to the file on GitHub', () => {
  const index: SiteIndex = new Map([
    ['README.md#security', { page: 'security.md', anchor: '' }],
    [
      'README.md#distributions-and-seeds',
      { page: 'service/control-headers.md', anchor: 'distributions-and-seeds' },
    ],
    ['src/obs/README.md#', { page: 'obs/index.md', anchor: '' }],
  ]);
  const from = (target: string, origin = 'README.md') => siteLink(target, origin, 'faults/delay.md', index);
  assert.equal(from('#security'), '../security.md');
  assert.equal(from('#distributions-and-seeds'), '../service/control-headers.md#distributions-and-seeds');
  assert.equal(from('src/obs/README.md'), '../obs/index.md');
  assert.equal(from('docs/adr/0005-releases.md'), '../adr/0005-releases.md');
  assert.equal(from('#matching'), `${REPO_BLOB}README.md#matching`, 'a section no page shows');
  assert.equal(from('src/echo/errors.ts'), `${REPO_BLOB}src/echo/errors.ts`);
  assert.equal(from('examples'), `${REPO_TREE}examples`);
  assert.equal(
    from('../../docs/adr/0004-operator-choices.md', 'src/operator/README.md'),
    '../adr/0004-operator-choices.md',
  );
  assert.equal(from('https://fast-check.dev'), 'https://fast-check.dev');
  assert.equal(from('docs/public/screenshots/web-ws.png'), '../public/screenshots/web-ws.png', 'a picture');
  assert.equal(from('docs/nothing.png'), `${REPO_BLOB}docs/nothing.png`, 'a picture that is not there');
  assert.throws(() => from('../../outside.md'), /leaves the repository/);
});

test('docs sections – a link to a page, written as GitHub reads it, is the page and the anchor of the site', () => {
  const index: SiteIndex = new Map();
  const from = (target: string, origin = 'README.md') => siteLink(target, origin, 'faults/delay.md', index);
  // GitHub drops the apostrophe, VitePress makes it a hyphen: the page's heading decides.
  assert.equal(
    from('docs/service/configuration.md#the-services-own-telemetry-opentelemetry'),
    '../service/configuration.md#the-service-s-own-telemetry-opentelemetry',
  );
  assert.equal(
    from('docs/scenarios.md#scenario-regex-dialect'),
    '../scenarios.md#scenario-regex-dialect',
    'an HTML id',
  );
  // The obs README links to the pages on GitHub (npm shows it too); on the site they are the pages.
  assert.equal(from(`${REPO_BLOB}docs/obs/logging.md`, 'src/obs/README.md'), '../obs/logging.md');
  assert.equal(
    from(
      `${REPO_BLOB}docs/service/configuration.md#the-services-own-telemetry-opentelemetry`,
      'src/obs/README.md',
    ),
    '../service/configuration.md#the-service-s-own-telemetry-opentelemetry',
  );
  assert.equal(
    from(`${REPO_BLOB}docs/nothing.md`),
    `${REPO_BLOB}docs/nothing.md`,
    'a page that is not there',
  );
  assert.equal(from(`${REPO_BLOB}src/echo/errors.ts`), `${REPO_BLOB}src/echo/errors.ts`);
});

test('docs sections – a page expands, its text escaped for Vue outside code, its links rewritten', () => {
  const page = [
    '# Delay',
    '',
    'See `<!--@section: x-->` in code, and <!--@section: y--> in text.',
    '',
    '<!--@section: README.md#what-it-is-for-->',
    '',
    '```md',
    '<!--@section: in-a-code-block.md-->',
    '```',
    '',
    'A `lognormal:<median>` and lognormal:<median>,<sigma> and {{ not vue }} and <br> and [Sec](../security.md).',
  ].join('\n');
  const index: SiteIndex = new Map();
  // The directive reads the real README: #what-it-is-for is one of its sections.
  const out = expandPage('faults/delay.md', page, index);
  assert.match(out, /`<!--@section: x-->` in code/, 'a directive in a code span is text');
  assert.match(out, /and <!--@section: y--> in text/, 'so is one within a line');
  assert.match(out, /^<!--@section: in-a-code-block\.md-->$/m, 'and one in a code block');
  assert.doesNotMatch(out, /<!--@section: README/);
  assert.match(out, /Point a client, a proxy or a whole service at echo-chaos/);
  assert.match(out, /`lognormal:<median>`/, 'code spans are left alone');
  assert.match(out, /lognormal:&lt;median>,&lt;sigma>/);
  assert.match(out, /&#123;&#123; not vue \}\}/);
  assert.match(out, /and <br> and/);
  assert.match(out, /\[Sec\]\(\.\.\/security\.md\)/);
});
