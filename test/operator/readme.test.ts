import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderOperatorReadme } from '../../scripts/readme-tables.ts';
import { OPERATOR_ERRORS } from '../../src/operator/errors.ts';

const README = readFileSync(new URL('../../src/operator/README.md', import.meta.url), 'utf8');

test('operator README – the generated error table is fresh (run `npx node scripts/readme-tables.ts --write`)', () => {
  const fresh = renderOperatorReadme(README);
  if (fresh !== README) {
    const ours = README.split('\n');
    const theirs = fresh.split('\n');
    const at = ours.findIndex((line, i) => line !== theirs[i]);
    assert.fail(
      `src/operator/README.md is stale from line ${at + 1}:\n  README:    ${ours[at]}\n  generated: ${theirs[at]}\n` +
        'run `npx node scripts/readme-tables.ts --write`',
    );
  }
});

test('operator README – a hand-edited error table is noticed; missing markers are refused', () => {
  const tampered = README.replace('| `OPERATOR_ERR_PUSH` | 502 |', '| `OPERATOR_ERR_PUSH` | 500 |');
  assert.notEqual(tampered, README, 'the OPERATOR_ERR_PUSH row was not found to tamper with');
  assert.equal(renderOperatorReadme(tampered), README);
  assert.throws(() => renderOperatorReadme('# operator\n'), /lacks the markers of section operator-settings/);
  const settingsTampered = README.replace('| `WORKERS` | `4` |', '| `WORKERS` | `8` |');
  assert.notEqual(settingsTampered, README, 'the WORKERS row was not found to tamper with');
  assert.equal(renderOperatorReadme(settingsTampered), README, 'the settings table is generated too');
});

test('operator README – every error code of OPERATOR_ERRORS is documented with its status', () => {
  for (const [code, def] of Object.entries(OPERATOR_ERRORS)) {
    const row = README.split('\n').find((line) => line.startsWith(`| \`${code}\` |`));
    assert.ok(row, `${code} has no row in src/operator/README.md`);
    assert.ok(row.includes(`| ${def.status} |`), `${code} status`);
  }
});
