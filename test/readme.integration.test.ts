import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { readerTexts } from '../scripts/docs-site.ts';
import { GENERATED_PAGES, renderPage } from '../scripts/readme-tables.ts';
import { FAULT_DEFAULT_VARIABLES, HEADER_VARIABLE, VARIABLES } from '../src/echo/config.ts';
import { ECHO_ERRORS } from '../src/echo/errors.ts';
import { SCENARIO_ERRORS } from '../src/scenario/errors.ts';

// The README is the path; the reference it leads to, generated tables included, is the docs site's pages.
const CONFIGURATION_PAGE = 'docs/service/configuration.md';
const ERRORS_PAGE = 'docs/service/errors.md';
const read = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');
const CONFIGURATION = read(CONFIGURATION_PAGE);
const ERRORS = read(ERRORS_PAGE);
/** The README and every page of docs/ but the ADRs: what their prose names must exist. */
const TEXTS = readerTexts();
const PACKAGE = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
  scripts: Record<string, string>;
};

test('README – the generated tables of the docs pages are fresh (run `npm run gen:readme`)', () => {
  for (const file of Object.keys(GENERATED_PAGES)) {
    const text = read(file);
    const fresh = renderPage(file, text);
    if (fresh !== text) {
      const ours = text.split('\n');
      const theirs = fresh.split('\n');
      const at = ours.findIndex((line, i) => line !== theirs[i]);
      assert.fail(
        `${file} is stale from line ${at + 1}:\n  page:      ${ours[at]}\n  generated: ${theirs[at]}\n` +
          'run `npm run gen:readme`',
      );
    }
  }
});

test('README – renderPage notices a hand-edited table', () => {
  const tampered = CONFIGURATION.replace('| `PORT` | Port to listen on', '| `PORT` | Port we listen on');
  assert.notEqual(tampered, CONFIGURATION, 'the PORT row was not found to tamper with');
  assert.notEqual(renderPage(CONFIGURATION_PAGE, tampered), tampered);
  assert.equal(renderPage(CONFIGURATION_PAGE, tampered), CONFIGURATION);
  const errors = ERRORS.replace('| `ECHO_ERR_INVALID_HEADER` | 400 |', '| `ECHO_ERR_INVALID_HEADER` | 500 |');
  assert.notEqual(errors, ERRORS, 'the ECHO_ERR_INVALID_HEADER row was not found to tamper with');
  assert.equal(renderPage(ERRORS_PAGE, errors), ERRORS);
});

test('README – renderPage refuses a page without the generated-section markers', () => {
  assert.throws(
    () => renderPage(CONFIGURATION_PAGE, '# Configuration\n'),
    /lacks the markers of section variables/,
  );
  assert.throws(() => renderPage(ERRORS_PAGE, '# Errors\n'), /lacks the markers of section errors/);
  assert.throws(() => renderPage('README.md', '# echo-chaos\n'), /holds no table/);
});

test('README – every variable of VARIABLES is documented, with its default and form', () => {
  const lines = CONFIGURATION.split('\n');
  for (const spec of VARIABLES) {
    const row = lines.find((line) => line.startsWith(`| \`${spec.name}\` |`));
    assert.ok(row, `${spec.name} has no row in ${CONFIGURATION_PAGE}`);
    assert.ok(row.includes(spec.default === '' ? '(empty)' : `\`${spec.default}\``), `${spec.name} default`);
    assert.ok(row.includes(spec.form.replaceAll('|', '\\|')), `${spec.name} form`);
  }
  assert.ok(CONFIGURATION.includes(`\`${HEADER_VARIABLE.name}\``));
  // The control headers' defaults (ECHO_STATUS, ...): a row each, with the header's form.
  for (const spec of FAULT_DEFAULT_VARIABLES) {
    const row = lines.find((line) => line.startsWith(`| \`${spec.name}\` |`));
    assert.ok(row, `${spec.name} has no row in ${CONFIGURATION_PAGE}`);
    assert.ok(row.includes(spec.form.replaceAll('|', '\\|')), `${spec.name} form`);
  }
});

test('README – every error code of ECHO_ERRORS and SCENARIO_ERRORS is documented with its status', () => {
  for (const [code, def] of Object.entries({ ...ECHO_ERRORS, ...SCENARIO_ERRORS })) {
    const row = ERRORS.split('\n').find((line) => line.startsWith(`| \`${code}\` |`));
    assert.ok(row, `${code} has no row in ${ERRORS_PAGE}`);
    assert.ok(row.includes(`| ${def.status} |`), `${code} status`);
  }
});

test('README – every variable of the seed specification is a variable of the service', () => {
  const seed = [
    'PORT',
    'ENABLE_TLS',
    'CERT_FILE',
    'KEY_FILE',
    'ENABLE_CORS',
    'MAX_BODY_SIZE',
    'ECHO_CHAOS',
    'ECHO_DELAY',
    'ECHO_RATE_LIMIT_RPS',
    'ECHO_RATE_LIMIT_BURST',
    'ECHO_SSE_TICKER',
    'ECHO_HISTORY_SIZE',
    'ECHO_SCENARIO_FILE',
    'ECHO_SERVER_INFO',
    'LOG_REQUESTS',
    'LOG_HEADERS',
    'LOG_BODY',
    'LOG_TRANSACTION',
    'LOG_RESPONSE',
    'LOG_RESPONSE_HEADERS',
    'LOG_RESPONSE_BODY',
    'MAX_LOG_BODY_SIZE',
  ];
  const names = new Set(VARIABLES.map((v) => v.name));
  assert.deepEqual(
    seed.filter((name) => !names.has(name)),
    [],
  );
});

test('README and docs – every variable and error code the prose names exists in the code', () => {
  const variables = new Set<string>([...VARIABLES, ...FAULT_DEFAULT_VARIABLES].map((v) => v.name));
  // Named in the prose as examples of what is ignored or as the header family.
  const mentionedOnly = new Set(['ECHO_HEADER_', 'ECHO_SERVICE_HOST']);
  // docs/obs/ is the library's reference, whose constants (`MAX_RETRY_ATTEMPTS`) are obs's own.
  for (const { file, text } of TEXTS.filter(({ file }) => !file.startsWith('docs/obs/'))) {
    for (const [, name] of text.matchAll(/`((?:ECHO|LOG|MAX)_[A-Z_]+)(?:[=<`])/g)) {
      if (name === undefined || name.startsWith('ECHO_ERR_') || mentionedOnly.has(name)) continue;
      assert.ok(variables.has(name), `${file} names ${name}, which the service does not read`);
    }
    for (const [code] of text.matchAll(/ECHO_ERR_[A-Z_]+/g)) {
      assert.ok(code in ECHO_ERRORS, `${file} names ${code}, which is not in ECHO_ERRORS`);
    }
    for (const [code] of text.matchAll(/SCENARIO_ERR_[A-Z_]+/g)) {
      assert.ok(code in SCENARIO_ERRORS, `${file} names ${code}, which is not in SCENARIO_ERRORS`);
    }
  }
});

test("README and docs – run the repository's scripts through npm scripts, never `node <file>.ts` (the machine's Node may be 20)", () => {
  // `npx node …` runs the project's Node 24 (the `node` devDependency); a bare `node` may not.
  for (const { file, text } of TEXTS) {
    const bare = [
      ...text.matchAll(/(?<!npx )\bnode (?:--\S+ )*((?:scripts|src|bench|examples)\/\S+\.ts)/g),
    ].map(([, script]) => script);
    assert.deepEqual(
      bare,
      [],
      `${file} lines that run a .ts file with bare \`node\`: give each an npm script`,
    );
    for (const [, name] of text.matchAll(/\bnpm run ([\w:-]+)/g)) {
      assert.ok(
        name !== undefined && Object.hasOwn(PACKAGE.scripts, name),
        `${file} runs \`npm run ${name}\`, not in package.json`,
      );
    }
  }
  // Every script of scripts/ and the config-doc generator has an npm script that runs it.
  // scripts/docs-site.ts is no command: the docs site's VitePress config imports it. Nor is
  // scripts/obs-workspace-prepack.mjs: src/obs/package.json's prepack runs it (test/obs/workspace-pack.integration.test.ts).
  // Nor scripts/cache-dir.ts: the API report and the helm helper import it (where fetched tools are kept).
  // Nor scripts/operator-sources-prepack.mjs: src/operator/package.json's prepack runs it
  // (test/packages.integration.test.ts, "packing src/operator itself fails").
  const LIBRARIES = new Set([
    'docs-site.ts',
    'obs-workspace-prepack.mjs',
    'operator-sources-prepack.mjs',
    'cache-dir.ts',
  ]);
  const files = [
    ...readdirSync(new URL('../scripts/', import.meta.url))
      .filter((f) => !LIBRARIES.has(f))
      .map((f) => `scripts/${f}`),
    'src/obs/config-doc.ts',
  ];
  const commands = Object.values(PACKAGE.scripts);
  for (const file of files) {
    assert.ok(
      commands.some((command) => command.startsWith(`node ${file}`)),
      `${file} has no npm script (npm run …) that runs it`,
    );
  }
  for (const name of [
    'gen:crd',
    'gen:manifests',
    'gen:readme',
    'gen:config-doc',
    'gen:chart-values',
    'api-report',
  ]) {
    assert.match(PACKAGE.scripts[name] ?? '', / --write$/, `npm run ${name} rewrites its files`);
  }
});

test("README – `npm run release-check -- vX.Y.Z` runs on the project's Node wherever npm runs it", () => {
  const env = { ...process.env };
  for (const name of Object.keys(env))
    if (name.startsWith('GITHUB_') || name.startsWith('npm_')) delete env[name];
  const result = spawnSync('npm', ['run', '--silent', 'release-check', '--', `v${PACKAGE.version}`], {
    cwd: new URL('..', import.meta.url),
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
  assert.match(
    result.stdout,
    new RegExp(`^release-check: v${PACKAGE.version.replaceAll('.', '\\.')} releases `, 'm'),
  );
});
