import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { GENERATED_PAGES, renderObsPage } from '../../src/obs/config-doc.ts';
import { ENV_VARIABLES } from '../../src/obs/core/config/config-env.ts';
import { FEATURES, plannedFeatureOf } from '../../src/obs/core/features.ts';
import { OBS_ERRORS } from '../../src/obs/index.ts';

// The tables are the docs site's: the features and keys on obs's overview, the error codes with the
// actuator routes that answer them.
const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
const INDEX_PAGE = 'docs/obs/index.md';
const INDEX = read(INDEX_PAGE);
const ACTUATOR = read('docs/obs/actuator.md');

test('config-doc – the generated tables of the docs pages are fresh (npm run gen:config-doc)', () => {
  assert.deepEqual(Object.keys(GENERATED_PAGES).sort(), ['docs/obs/actuator.md', INDEX_PAGE]);
  for (const file of Object.keys(GENERATED_PAGES)) {
    const text = read(file);
    const fresh = renderObsPage(file, text);
    if (fresh !== text) {
      const ours = text.split('\n');
      const theirs = fresh.split('\n');
      const at = ours.findIndex((line, i) => line !== theirs[i]);
      assert.fail(
        `${file} is stale from line ${at + 1}:\n  page:      ${ours[at]}\n  generated: ${theirs[at]}`,
      );
    }
  }
});

test('config-doc – every key a source may set is documented with its variable, every error code with its status', () => {
  const lines = INDEX.split('\n');
  let built = 0;
  for (const [name, { path }] of ENV_VARIABLES) {
    const row = lines.some((l) => l.startsWith(`| \`${path}\` | \`${name}\` |`));
    if (plannedFeatureOf(path) === undefined) {
      assert.ok(row, `${path} has no row`);
      built++;
    } else {
      assert.ok(!row, `${path} is a key of a planned feature, yet documented as a setting`);
    }
  }
  assert.ok(lines.some((l) => l.startsWith('| `obs.context.request-id-header` |')));
  assert.equal(built, ENV_VARIABLES.size, 'every key is documented');
  const errorLines = ACTUATOR.split('\n');
  for (const [code, def] of Object.entries(OBS_ERRORS)) {
    assert.ok(
      errorLines.some((l) => l.startsWith(`| \`${code}\` | ${def.status} |`)),
      `${code} has no row`,
    );
  }
});

test('config-doc – the feature table says which features are built and which are planned', () => {
  const lines = INDEX.split('\n');
  for (const feature of FEATURES) {
    const row = lines.find((l) => l.startsWith(`| ${feature.name} |`));
    assert.ok(row, `${feature.name} has no row`);
    assert.match(row, feature.status === 'planned' ? /\| \*\*planned\*\*/ : /\| built \|/, feature.name);
  }
  const notListed = lines.find((l) => l.startsWith('Not listed: the keys of the planned features'));
  for (const feature of FEATURES.filter((f) => f.status === 'planned')) {
    assert.ok(notListed?.includes(`\`obs.${feature.key}\``), feature.key);
  }
});

test('config-doc – a hand-edited table is noticed; missing markers are refused', () => {
  const tampered = INDEX.replace('| `obs.cardinality.enabled` |', '| `obs.cardinality.on` |');
  assert.notEqual(tampered, INDEX);
  assert.equal(renderObsPage(INDEX_PAGE, tampered), INDEX);
  const errors = ACTUATOR.replace('| `OBS_ERR_INTERNAL` | 500 |', '| `OBS_ERR_INTERNAL` | 503 |');
  assert.notEqual(errors, ACTUATOR);
  assert.equal(renderObsPage('docs/obs/actuator.md', errors), ACTUATOR);
  assert.throws(() => renderObsPage(INDEX_PAGE, '# obs\n'), /lacks the markers/);
  assert.throws(() => renderObsPage('docs/obs/actuator.md', '# Actuator routes\n'), /lacks the markers/);
  assert.throws(() => renderObsPage('src/obs/README.md', '# obs\n'), /holds no table/);
});
