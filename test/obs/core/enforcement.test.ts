import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isEnforcementMode, parseEnforcementMode } from '../../../src/obs/core/enforcement.ts';
import { Enforcement, type EnforcementMode, ObsError } from '../../../src/obs/index.ts';

test('enforcement – starts at the given mode, ENFORCING by default', () => {
  assert.equal(new Enforcement().get(), 'ENFORCING');
  assert.equal(new Enforcement('DRY_RUN').get(), 'DRY_RUN');
  assert.equal(new Enforcement('DRY_RUN').enforcing, false);
});

test('enforcement – set returns previous and current and is visible at once', () => {
  const mode = new Enforcement();
  assert.deepEqual(mode.set('DRY_RUN'), { previous: 'ENFORCING', current: 'DRY_RUN' });
  assert.equal(mode.get(), 'DRY_RUN');
  assert.deepEqual(mode.set('DRY_RUN'), { previous: 'DRY_RUN', current: 'DRY_RUN' });
  assert.deepEqual(mode.set('ENFORCING'), { previous: 'DRY_RUN', current: 'ENFORCING' });
  assert.equal(mode.enforcing, true);
});

test('enforcement – listeners hear each change once, not a set to the same mode; a throwing one is harmless', () => {
  const mode = new Enforcement();
  const heard: string[] = [];
  mode.onChange(() => {
    throw new Error('listener bug');
  });
  const off = mode.onChange(({ previous, current }) => heard.push(`${previous}->${current}`));
  mode.set('DRY_RUN');
  mode.set('DRY_RUN');
  mode.set('ENFORCING');
  off();
  mode.set('DRY_RUN');
  assert.deepEqual(heard, ['ENFORCING->DRY_RUN', 'DRY_RUN->ENFORCING']);
  assert.equal(mode.get(), 'DRY_RUN');
});

test('enforcement – a mode is read with the rule of OBS_ENFORCEMENT_MODE: case, blanks, - and _ aside (#40)', () => {
  for (const [value, mode] of [
    ['dry_run', 'DRY_RUN'],
    ['Dry-Run', 'DRY_RUN'],
    [' DRY_RUN ', 'DRY_RUN'],
    ['enforcing', 'ENFORCING'],
    ['ENFORCING', 'ENFORCING'],
  ] as const) {
    assert.equal(parseEnforcementMode(value), mode, value);
  }
  for (const bad of ['OFF', 'dry run', 'DRYRUN', '', undefined, null, 1, ['DRY_RUN']]) {
    assert.equal(parseEnforcementMode(bad), undefined, String(bad));
  }
  const lever = new Enforcement('dry_run' as EnforcementMode);
  assert.equal(lever.get(), 'DRY_RUN');
  assert.deepEqual(lever.set('enforcing' as EnforcementMode), { previous: 'DRY_RUN', current: 'ENFORCING' });
  assert.equal(lever.get(), 'ENFORCING');
});

test('enforcement – anything but the two modes is refused with OBS_ERR_INVALID_MODE and changes nothing', () => {
  const mode = new Enforcement();
  for (const bad of ['OFF', 'dry run', '', 'ENFORCE', undefined, 1]) {
    assert.throws(
      () => mode.set(bad as EnforcementMode),
      (error: unknown) =>
        error instanceof ObsError && error.code === 'OBS_ERR_INVALID_MODE' && error.statusCode === 400,
    );
    assert.equal(isEnforcementMode(bad), false);
  }
  assert.equal(mode.get(), 'ENFORCING');
  assert.throws(() => new Enforcement('OFF' as EnforcementMode), /invalid enforcement mode "OFF"/);
});
