/**
 * src/echo/control-catalogue.ts: the one source of the header table of docs/service/control-headers.md
 * and the metadata table of docs/service/grpc.md. It is held to what the code reads: the gRPC keys
 * to `GRPC_METADATA_KEYS`, the headers to the HTTP parser's table (src/echo/controls.ts); and the
 * two generated sections to the freshness test of test/readme.integration.test.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { GENERATED_PAGES, renderPage } from '../../scripts/readme-tables.ts';
import { CONTROLS, headerRows, metadataRows } from '../../src/echo/control-catalogue.ts';
import { parseControls, SET_HEADER_PREFIX } from '../../src/echo/controls.ts';
import {
  GRPC_CHAOS_CODES,
  GRPC_ERROR_KINDS,
  MAX_STATUS_MESSAGE_LENGTH,
  MAX_STREAM_FAIL_AFTER,
} from '../../src/echo/grpc/faults.ts';
import { GRPC_METADATA_KEYS, GRPC_STATUS_NAMES } from '../../src/echo/grpc/metadata.ts';
import { FAULT_FIELDS } from '../../src/scenario/faults.ts';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
const HEADERS_PAGE = 'docs/service/control-headers.md';
const GRPC_PAGE = 'docs/service/grpc.md';

/** A catalogue header as the parser sees it: lower case; the set-header family as its prefix. */
const parserName = (header: string) => header.toLowerCase().replace(/<name>$/, '');

/**
 * The names the HTTP parser reads: the fault fields' headers (FAULT_FIELDS), the other entries of
 * its table (`PARSERS` of src/echo/controls.ts, not exported: read from the source), the
 * set-header prefix, and `x-request-id`, which fastify reads (`requestIdHeader` of src/echo/app.ts).
 */
function parserNames(): string[] {
  const source = read('src/echo/controls.ts');
  const start = source.indexOf('const PARSERS');
  const end = source.indexOf('\n]);', start);
  assert.ok(start !== -1 && end !== -1, 'the PARSERS table of src/echo/controls.ts was not found');
  const table = source.slice(start, end);
  assert.match(
    table,
    /\.\.\.FAULT_FIELDS\.map\(\(f\) => \[f\.header,/,
    'PARSERS no longer spreads FAULT_FIELDS',
  );
  const own = [...table.matchAll(/^ {4}'(x-echo-[a-z-]+)',$/gm)].map((m) => m[1]!);
  assert.ok(own.length >= 6, `only ${own.length} names read from PARSERS: has its layout changed?`);
  const app = read('src/echo/app.ts');
  assert.match(app, /requestIdHeader: 'x-request-id'/, 'src/echo/app.ts no longer reads x-request-id');
  return [...FAULT_FIELDS.map((f) => f.header), ...own, SET_HEADER_PREFIX, 'x-request-id'];
}

test('control catalogue – its gRPC keys are GRPC_METADATA_KEYS, in order', () => {
  assert.deepEqual(
    metadataRows().map((r) => r.name),
    [...GRPC_METADATA_KEYS],
  );
  // Every key of the catalogue is a row, and no key is given twice.
  const keys = CONTROLS.flatMap((c) => (c.grpc === undefined ? [] : [c.grpc.key]));
  assert.deepEqual([...keys].sort(), [...GRPC_METADATA_KEYS].sort());
});

test('control catalogue – every header the HTTP parser reads has a row, and every row a parser', () => {
  const catalogue = headerRows().map((r) => parserName(r.name));
  assert.equal(new Set(catalogue).size, catalogue.length, 'a header is in the catalogue twice');
  const parser = parserNames();
  assert.deepEqual(
    parser.filter((name) => !catalogue.includes(name)),
    [],
    'headers the parser reads without a row in src/echo/control-catalogue.ts',
  );
  assert.deepEqual(
    catalogue.filter((name) => !parser.includes(name)),
    [],
    'rows of src/echo/control-catalogue.ts the parser does not read',
  );
});

test('control catalogue – the parser knows each of its X-Echo-* headers (none is an unknown control header)', () => {
  const limits = { maxDelayMs: 30_000, maxResponseBytes: 1_048_576 };
  const unknown = (name: string) =>
    parseControls({ [name]: 'not-a-valid-value' }, limits, () => 0.5).problems.some((p) =>
      p.message.startsWith('unknown control header'),
    );
  assert.ok(unknown('x-echo-not-a-control'), 'the parser no longer calls an unknown header unknown');
  for (const { name } of headerRows()) {
    if (!name.toLowerCase().startsWith('x-echo-')) continue;
    const header = name.endsWith('<Name>') ? `${parserName(name)}cache-control` : name.toLowerCase();
    assert.ok(!unknown(header), `${name}: the parser calls it an unknown control header`);
  }
});

test('control catalogue – the gRPC meanings say what src/echo/grpc/faults.ts does', () => {
  const rows = new Map(metadataRows().map((r) => [r.name, r]));
  const chaos = rows.get('x-echo-chaos')!.what;
  const named = [...chaos.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]);
  assert.deepEqual(
    named,
    GRPC_CHAOS_CODES.map((code) => GRPC_STATUS_NAMES[code]),
  );
  const error = rows.get('x-echo-error')!;
  for (const kind of GRPC_ERROR_KINDS) assert.ok(error.form.includes(`\`${kind}\``), `x-echo-error: ${kind}`);
  assert.ok(
    rows.get('x-echo-status-message')!.form.includes(`at most ${MAX_STATUS_MESSAGE_LENGTH} characters`),
  );
  assert.ok(rows.get('x-echo-stream-fail-after')!.form.endsWith(`0-${MAX_STREAM_FAIL_AFTER}`));
});

test('control catalogue – a key that shares its header reads as the header, its page links made to point there', () => {
  const delay = metadataRows().find((r) => r.name === 'x-echo-delay')!;
  const header = headerRows().find((r) => r.name === 'X-Echo-Delay')!;
  assert.equal(delay.what, header.what);
  assert.ok(header.form.includes('](#distributions-and-seeds)'));
  assert.equal(
    delay.form,
    header.form.replace('](#distributions-and-seeds)', '](control-headers.md#distributions-and-seeds)'),
  );
});

test('control catalogue – the freshness test covers both tables, and a hand edit of either fails it', () => {
  assert.deepEqual(Object.keys(GENERATED_PAGES[HEADERS_PAGE] ?? {}), ['control-headers']);
  assert.deepEqual(Object.keys(GENERATED_PAGES[GRPC_PAGE] ?? {}), ['grpc-metadata']);
  for (const [file, row] of [
    [HEADERS_PAGE, '| `X-Echo-Chaos` | random failure percentage |'],
    [GRPC_PAGE, '| `x-echo-chaos` | percentage of calls'],
  ] as const) {
    const page = read(file);
    assert.equal(renderPage(file, page), page, `${file} is stale: run \`npm run gen:readme\``);
    const tampered = page.replace(row, row.replace('percentage', 'share'));
    assert.notEqual(tampered, page, `${file}: the row to tamper with was not found`);
    assert.equal(renderPage(file, tampered), page, `${file}: a hand edit is not undone`);
  }
  assert.throws(() => renderPage(GRPC_PAGE, '# gRPC\n'), /lacks the markers of section grpc-metadata/);
});
