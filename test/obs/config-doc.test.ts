import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderObsReadme } from '../../src/obs/config-doc.ts';
import { ENV_VARIABLES, OBS_ERRORS } from '../../src/obs/index.ts';

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

test('config-doc – every key is documented with its variable, every error code with its status', () => {
  const lines = README.split('\n');
  for (const [name, { path }] of ENV_VARIABLES) {
    assert.ok(
      lines.some((l) => l.startsWith(`| \`${path}\` | \`${name}\` |`)),
      `${path} has no row`,
    );
  }
  for (const [code, def] of Object.entries(OBS_ERRORS)) {
    assert.ok(
      lines.some((l) => l.startsWith(`| \`${code}\` | ${def.status} |`)),
      `${code} has no row`,
    );
  }
});

test('config-doc – a hand-edited table is noticed; missing markers are refused', () => {
  const tampered = README.replace('| `obs.cardinality.enabled` |', '| `obs.cardinality.on` |');
  assert.notEqual(tampered, README);
  assert.equal(renderObsReadme(tampered), README);
  assert.throws(() => renderObsReadme('# obs\n'), /lacks the markers/);
});
