import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderObsReadme } from '../../src/obs/config-doc.ts';
import { ENV_VARIABLES } from '../../src/obs/config-env.ts';
import { FEATURES, plannedFeatureOf } from '../../src/obs/features.ts';
import { OBS_ERRORS } from '../../src/obs/index.ts';

const README = readFileSync(new URL('../../src/obs/README.md', import.meta.url), 'utf8');

test('config-doc – the generated tables of src/obs/README.md are fresh (npx node src/obs/config-doc.ts --write)', () => {
  const fresh = renderObsReadme(README);
  if (fresh !== README) {
    const ours = README.split('\n');
    const theirs = fresh.split('\n');
    const at = ours.findIndex((line, i) => line !== theirs[i]);
    assert.fail(
      `src/obs/README.md is stale from line ${at + 1}:\n  README:    ${ours[at]}\n  generated: ${theirs[at]}`,
    );
  }
});

test('config-doc – every key a source may set is documented with its variable, every error code with its status', () => {
  const lines = README.split('\n');
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
  for (const [code, def] of Object.entries(OBS_ERRORS)) {
    assert.ok(
      lines.some((l) => l.startsWith(`| \`${code}\` | ${def.status} |`)),
      `${code} has no row`,
    );
  }
});

test('config-doc – the feature table says which features are built and which are planned', () => {
  const lines = README.split('\n');
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
  const tampered = README.replace('| `obs.cardinality.enabled` |', '| `obs.cardinality.on` |');
  assert.notEqual(tampered, README);
  assert.equal(renderObsReadme(tampered), README);
  assert.throws(() => renderObsReadme('# obs\n'), /lacks the markers/);
});
